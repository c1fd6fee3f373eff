//! `--tile` end to end on the CPU path: a fixed 64x64 model upscales a 150x90 clip through
//! tiles (issue 13: fixed-size models are no longer refused), a tile size on a dynamic model
//! gives the untiled picture, the report says what tiling ran and why (JSON and summary), and
//! bad tile options are one line with exit 2.

mod common;

use common::*;

const W: u32 = 150;
const H: u32 = 90;
const FRAMES: u32 = 6;

#[test]
fn a_fixed_64x64_model_upscales_a_150x90_clip_through_tiles() {
    let dir = scratch();
    let input = make_photo_clip(dir.path(), "in.mp4", W, H, FRAMES);
    let cpu = CPU_LOSSLESS_JSON;
    // The reference: the same nearest-neighbour x2 network with dynamic sizes, untiled.
    let whole = dir.path().join("whole.mkv");
    let r = json_report(&upscale(&input, &whole, &fixture("nearest_x2.onnx"), &cpu));
    assert_eq!(r["tiling"]["tiled"], false);
    assert_eq!(r["tiling"]["reason"], "the model takes the whole frame");

    let tiled = dir.path().join("tiled.mkv");
    let r = json_report(&upscale(
        &input,
        &tiled,
        &fixture("fixed_64x64_x2.onnx"),
        &cpu,
    ));
    assert_eq!(r["frames_out"], FRAMES);
    assert_eq!(r["output_size"], serde_json::json!([2 * W, 2 * H]));
    assert_eq!(r["backend"]["name"], "onnxruntime-cpu");
    let t = &r["tiling"];
    assert_eq!(t["tiled"], true, "{t}");
    assert_eq!(t["tile"], serde_json::json!([64, 64]));
    assert_eq!(t["overlap"], 16);
    assert_eq!(t["grid"], serde_json::json!([3, 2]));
    assert_eq!(t["reason"], "the model takes fixed 64x64 inputs");
    // The model's own description is kept: it takes 64x64 only.
    assert_eq!(r["model"]["max_input_size"], serde_json::json!([64, 64]));

    // A tile size on the dynamic model, with another overlap.
    let sized = dir.path().join("sized.mkv");
    let extra = [&cpu[..], &["--tile", "48x40", "--tile-overlap", "8"]].concat();
    let r = json_report(&upscale(
        &input,
        &sized,
        &fixture("nearest_x2.onnx"),
        &extra,
    ));
    assert_eq!(r["tiling"]["grid"], serde_json::json!([4, 3]));
    assert_eq!(r["tiling"]["reason"], "--tile 48x40");

    // Nearest-neighbour is pointwise: blended tiles in the right places are the whole frame.
    let reference = decode_yuv420(&whole);
    for (name, out) in [("fixed 64x64", &tiled), ("--tile 48x40", &sized)] {
        let got = decode_yuv420(out);
        assert_eq!(got.len(), reference.len(), "{name}: frames and size");
        let db = psnr(&got, &reference);
        println!("{name} tiled vs whole: {db:.1} dB");
        assert!(db >= 45.0, "{name}: {db:.1} dB");
    }
    assert_eq!(frame_times(&tiled), frame_times(&input), "timestamps");
}

#[test]
fn the_summary_and_the_benchmark_say_what_tiling_ran() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "150x90", 3);
    let model = fixture("fixed_64x64_x2.onnx");
    let o = upscale(
        &input,
        &dir.path().join("out.mp4"),
        &model,
        &["--device", "cpu", "--progress", "off"],
    );
    assert_exit(&o, 0);
    let summary = stdout(&o);
    assert!(
        summary.contains(
            "\n  tiling: tiles 64x64, overlap 16, 3x2 per frame: the model takes fixed 64x64 inputs\n"
        ),
        "{summary}"
    );
    let o = run(&[
        "benchmark",
        "-i",
        input.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--device",
        "cpu",
        "--frames",
        "2",
        "--progress",
        "off",
    ]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("  tiling: tiles 64x64, overlap 16, 3x2 per frame"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("(2 frames, batch 1)"),
        "a model fixed at batch 1 runs one tile a run: {}",
        stdout(&o)
    );
    // A dynamic batch axis: tiles run four a run (CPU_TILE_BATCHING), whole frames one.
    for (tile, batch) in [("48x40", 4), ("off", 1)] {
        let o = run(&[
            "benchmark",
            "-i",
            input.to_str().unwrap(),
            "-m",
            fixture("nearest_x2.onnx").to_str().unwrap(),
            "--device",
            "cpu",
            "--frames",
            "2",
            "--tile",
            tile,
            "--json",
        ]);
        let r = json_report(&o);
        assert_eq!(r["inference_only"]["batch"], batch, "--tile {tile}");
        assert_eq!(r["full_report"]["tiling"]["tiled"], tile != "off");
    }
}

#[test]
fn bad_tile_options_are_one_line_and_exit_2() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "150x90", 2);
    let out = dir.path().join("out.mp4");
    let nearest = fixture("nearest_x2.onnx");
    let fixed = fixture("fixed_64x64_x2.onnx");
    let cases: [(&[&str], &std::path::Path, &str); 6] = [
        (
            &["--tile", "0x5"],
            &nearest,
            "invalid value '0x5' for '--tile",
        ),
        (
            &["--tile", "abc"],
            &nearest,
            "not a tile size; use auto, off or WxH",
        ),
        (
            &["--tile-overlap", "99999"],
            &nearest,
            "'--tile-overlap <N>': out of range",
        ),
        (
            &["--tile", "20x20", "--tile-overlap", "10"],
            &nearest,
            "--tile-overlap 10: tiles of 20x20 take an overlap under half a tile (at most 9)",
        ),
        (
            &["--tile", "48x48"],
            &fixed,
            "--tile 48x48: model fixed_64x64_x2 takes fixed 64x64 inputs",
        ),
        (
            &["--tile-overlap", "40"],
            &fixed,
            "--tile-overlap 40: tiles of 64x64 take an overlap under half a tile (at most 31)",
        ),
    ];
    for (extra, model, why) in cases {
        let o = upscale(&input, &out, model, extra);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.starts_with("rave: error: ") && err.contains(why),
            "{extra:?}: {err}"
        );
        assert!(!out.exists(), "{extra:?}: no output");
    }
    let o = upscale(
        &input,
        &out,
        &nearest,
        // Checked before the GPU is looked for, so this holds on any machine (the overlap is
        // checked against the tiles that run, once the model is read).
        &["--device", "gpu", "--tile", "0x20", "--json"],
    );
    assert_exit(&o, 2);
    let e: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON error");
    assert_eq!(e["error"]["exit_code"], 2);
    assert_eq!(e["error"]["family"], "usage", "{e}");
}

#[test]
fn a_fixed_size_model_without_tiles_is_a_model_problem_saying_what_would_run_it() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "150x90", 2);
    let out = dir.path().join("out.mp4");
    let o = upscale(
        &input,
        &out,
        &fixture("fixed_64x64_x2.onnx"),
        &["--tile", "off"],
    );
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    let said = "takes fixed 64x64 inputs, the video is 150x90; --tile off gives it whole frames (--tile auto tiles it)";
    assert!(err.contains(said), "{err}");
    // rave plan and rave benchmark refuse it the same way (a plan went through, a benchmark
    // failed as an internal error).
    let m = fixture("fixed_64x64_x2.onnx");
    let work = dir.path().join("work");
    let plan = [
        "plan",
        "-o",
        out.to_str().unwrap(),
        "--work",
        work.to_str().unwrap(),
    ];
    for command in [&plan[..], &["benchmark", "--frames", "2"][..]] {
        let o = rave()
            .args(command)
            .args(["-i", input.to_str().unwrap(), "-m", m.to_str().unwrap()])
            .args(["--tile", "off"])
            .output()
            .unwrap();
        assert_exit(&o, 5);
        assert!(stderr(&o).contains(said), "{command:?}: {}", stderr(&o));
    }
    assert!(!dir.path().join("work").exists(), "nothing planned");
    // A frame smaller than the model, whole: refused, saying auto pads it (it does:
    // block_models_e2e.rs).
    let small = make_clip(dir.path(), "small.mp4", "32x32", 2);
    let o = upscale(
        &small,
        &out,
        &fixture("fixed_64x64_x2.onnx"),
        &["--tile", "off"],
    );
    assert_exit(&o, 5);
    assert!(
        stderr(&o)
            .contains("the video is 32x32; --tile off gives it whole frames (--tile auto pads it)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_help_explains_the_tile_options() {
    for command in ["upscale", "benchmark"] {
        let o = run(&[command, "--help"]);
        assert_exit(&o, 0);
        let help = stdout(&o);
        for needle in [
            "--tile <auto|off|WxH>",
            "auto tiles only where the model cannot take the whole frame",
            "--tile-overlap <N>",
            "under half a tile",
            "[default: auto]",
            "[default: 16, lowered to under half a tile for tiles too small for it]",
        ] {
            assert!(
                help.contains(needle),
                "{command} --help lacks {needle:?}:\n{help}"
            );
        }
    }
}

#[test]
fn a_job_planned_with_one_tiling_is_not_resumed_with_another() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "150x90", 2);
    let out = dir.path().join("out.mp4");
    let work = dir.path().join("work");
    let model = fixture("nearest_x2.onnx");
    let plan = [
        "plan",
        "-i",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--work",
        work.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--device",
        "cpu",
        "--tile",
        "48x40",
    ];
    assert_exit(&run(&plan), 0);
    let at = [
        "--device",
        "cpu",
        "--work",
        work.to_str().unwrap(),
        "--progress",
        "off",
    ];
    let o = upscale(&input, &out, &model, &at);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--tile was 48x40, overlap 16, now auto, overlap 16"),
        "{}",
        stderr(&o)
    );
    let o = upscale(
        &input,
        &out,
        &model,
        &[&at[..], &["--tile", "48x40", "--json"]].concat(),
    );
    assert_eq!(json_report(&o)["tiling"]["reason"], "--tile 48x40");
}

#[test]
fn a_frame_as_thin_as_a_tile_is_one_tile_that_way() {
    // 300x24 with --tile 64x64: tiles clip to 64x24, one row; the overlap of 16 needs only
    // the width to take it.
    let dir = scratch();
    let input = make_clip(dir.path(), "thin.mp4", "300x24", 2);
    let out = dir.path().join("out.mp4");
    let o = upscale(
        &input,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--device", "cpu", "--tile", "64x64", "--json"],
    );
    assert_exit(&o, 0);
    let r = json_report(&o);
    assert_eq!(r["tiling"]["tile"], serde_json::json!([64, 24]), "{r}");
    assert_eq!(r["tiling"]["grid"][1], 1, "{r}");
    assert_eq!(r["output_size"], serde_json::json!([600, 48]), "{r}");
}
