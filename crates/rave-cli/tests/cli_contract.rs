//! The command-line contract: help, exit codes, one-line errors, JSON shapes — for bad
//! options, inputs, models and outputs.

mod common;

use std::path::Path;

use common::*;

#[test]
fn help_explains_commands_and_exit_codes() {
    let o = run(&["--help"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    for needle in [
        "upscale",
        "benchmark",
        "probe",
        "models",
        "Exit codes",
        "130",
        "RAVE_HOME",
    ] {
        assert!(text.contains(needle), "--help lacks {needle}:\n{text}");
    }
    let o = run(&["upscale", "--help"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    for needle in [
        "--crf",
        "--preset",
        "--codec",
        "--overwrite",
        "--progress",
        "--device",
        "h264",
        "hevc",
        "av1",
    ] {
        assert!(text.contains(needle), "upscale --help lacks {needle}");
    }
    // `rave plan` takes upscale's options but plans one file: its help says so, and does
    // not offer --skip-existing, which it refuses.
    let o = run(&["plan", "--help"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("Input video file: one (a plan is one job"),
        "{text}"
    );
    assert!(
        !text.contains("--skip-existing") && text.contains("--crf"),
        "{text}"
    );
}

#[test]
fn unknown_option_value_is_usage_error_2() {
    let o = run(&["upscale", "-i", "a.mp4", "-o", "b.mp4", "--codec", "mpeg1"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("mpeg1"), "{}", stderr(&o));
    let o = run(&[
        "upscale", "-i", "a.mp4", "-o", "b.mp4", "--codec", "mpeg1", "--json",
    ]);
    assert_exit(&o, 2);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON error");
    assert_eq!(v["error"]["exit_code"], 2);
    assert_eq!(v["error"]["kind"], "usage");
}

#[test]
fn bad_crf_or_preset_is_usage_error_2() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let clip = clip.to_str().unwrap();
    let out = dir.path().join("o.mp4");
    let out = out.to_str().unwrap();
    let nearest = fixture("nearest_x2.onnx");
    let m = nearest.to_str().unwrap();
    for extra in [["--crf", "99"], ["--preset", "warp"]] {
        let mut args = vec!["upscale", "-i", clip, "-o", out, "-m", m];
        args.extend(extra);
        let o = run(&args);
        assert_exit(&o, 2);
        assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", stderr(&o));
    }
    let o = run(&["upscale", "-i", clip, "-o", "x.avi", "-m", m]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(".mkv"), "{}", stderr(&o));
}

#[test]
fn missing_input_exits_3_with_one_line_naming_the_file() {
    let o = run(&[
        "upscale",
        "-i",
        "/nonexistent/clip.mp4",
        "-o",
        "/tmp/x.mp4",
        "-m",
        fixture("nearest_x2.onnx").to_str().unwrap(),
    ]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/clip.mp4") && err.contains("no such file"),
        "{err}"
    );
    // A mistyped input folder: the missing input is the error, not the output beside it;
    // for `rave plan` too.
    let m = fixture("nearest_x2.onnx");
    for command in ["upscale", "plan"] {
        let o = run(&[
            command,
            "-i",
            "/nonexistent/clips",
            "-o",
            "/tmp/upscaled",
            "-m",
            m.to_str().unwrap(),
        ]);
        assert_exit(&o, 3);
        assert!(
            stderr(&o).contains("/nonexistent/clips: no such file"),
            "{}",
            stderr(&o)
        );
    }
    // An output name without an extension says what it can be.
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let o = run(&[
        "upscale",
        "-i",
        input.to_str().unwrap(),
        "-o",
        dir.path().join("upscaled").to_str().unwrap(),
        "-m",
        m.to_str().unwrap(),
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(
            "has no extension; end it in .mp4, .mkv or .mov, or in '/' for an output folder"
        ),
        "{}",
        stderr(&o)
    );
    let o = run(&["probe", "/nonexistent/clip.mp4", "--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["kind"], "input_unreadable");
    assert_eq!(v["error"]["family"], "input");
    assert_eq!(v["error"]["code"], 500);
}

#[test]
fn not_a_video_exits_3() {
    let dir = scratch();
    let garbage = dir.path().join("garbage.mp4");
    std::fs::write(
        &garbage,
        (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let o = run(&["probe", garbage.to_str().unwrap()]);
    assert_exit(&o, 3);
    assert!(stderr(&o).contains("not a media file"), "{}", stderr(&o));

    // An MP4 cut before its index (written last) cannot be opened: it is said to be cut.
    let whole = make_clip(dir.path(), "whole.mp4", "32x32", 25);
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.mp4");
    std::fs::write(&cut, &bytes[..bytes.len() * 8 / 10]).unwrap();
    let o = run(&["probe", cut.to_str().unwrap()]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("damaged: the file is truncated: box 'mdat'"),
        "{}",
        stderr(&o)
    );

    let audio = dir.path().join("tone.m4a");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=duration=0.5",
        "-c:a",
        "aac",
        audio.to_str().unwrap(),
    ]);
    let o = run(&["probe", audio.to_str().unwrap()]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("no video stream (found: audio aac)"),
        "{}",
        stderr(&o)
    );

    let empty = dir.path().join("empty.mkv");
    std::fs::write(&empty, b"").unwrap();
    let o = run(&["probe", empty.to_str().unwrap()]);
    assert_exit(&o, 3);
    assert!(stderr(&o).contains("empty"), "{}", stderr(&o));
}

#[test]
fn undecodable_codec_exits_3() {
    let dir = scratch();
    let good = dir.path().join("good.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=32x32:rate=25:duration=0.2",
        "-c:v",
        "libx264",
        good.to_str().unwrap(),
    ]);
    // Rename the track's codec so that no decoder matches it.
    let bytes = std::fs::read(&good).unwrap();
    let at = bytes
        .windows(15)
        .position(|w| w == b"V_MPEG4/ISO/AVC")
        .expect("codec id");
    let mut bad_bytes = bytes.clone();
    bad_bytes[at + 14] = b'X';
    let bad = dir.path().join("unknown_codec.mkv");
    std::fs::write(&bad, bad_bytes).unwrap();
    let o = run(&[
        "upscale",
        "-i",
        bad.to_str().unwrap(),
        "-o",
        dir.path().join("o.mkv").to_str().unwrap(),
        "-m",
        fixture("nearest_x2.onnx").to_str().unwrap(),
    ]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("not one FFmpeg recognises"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn output_problems_exit_4_and_leave_nothing_behind() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let m = fixture("nearest_x2.onnx");
    let exists = dir.path().join("exists.mp4");
    std::fs::write(&exists, b"keep me").unwrap();
    let o = upscale(&clip, &exists, &m, &[]);
    assert_exit(&o, 4);
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&exists).unwrap(), b"keep me");

    let o = upscale(&clip, Path::new("/nonexistent/dir/o.mp4"), &m, &[]);
    assert_exit(&o, 4);
    let o = upscale(&clip, &clip, &m, &["--overwrite"]);
    assert_exit(&o, 4);
    assert!(stderr(&o).contains("is the input file"), "{}", stderr(&o));
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

/// ONNX Runtime is loaded only where it runs the model (the native engine needs none): asked
/// for the GPU on a machine without one, the run fails on the GPU, not on the runtime.
#[test]
fn a_models_dir_that_is_not_a_folder_is_a_usage_error() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let m = fixture("nearest_x2.onnx");
    let o = run(&["models", "--models-dir", "/nope"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o).trim(),
        "rave: error: --models-dir /nope: no such folder; name the folder that holds the .onnx models"
    );
    let o = upscale(
        &clip,
        &dir.path().join("o.mp4"),
        &m,
        &["--models-dir", m.to_str().unwrap()],
    );
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("not a folder"), "{}", stderr(&o));
    let o = rave()
        .args(["models", "--json"])
        .env("RAVE_MODELS_DIR", "/nope")
        .output()
        .unwrap();
    assert_exit(&o, 2);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("RAVE_MODELS_DIR=/nope: no such folder"),
        "{v}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_not_in_a_panic() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let clip = clip.to_str().unwrap();
    std::fs::copy(fixture("nearest_x2.onnx"), dir.path().join("tiny-x2.onnx")).unwrap();
    let models = dir.path().to_str().unwrap();
    for args in [
        vec!["probe", clip],
        vec!["probe", clip, "--json"],
        vec!["models", "--models-dir", models],
        vec!["models", "--models-dir", models, "--json"],
        vec!["devices"],
        vec!["probe", "/nonexistent.mp4", "--json"],
    ] {
        // The reader is gone before rave writes a byte.
        let mut child = rave()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(o.status.code(), Some(101), "{args:?}: {err}");
    }
}

#[test]
fn pipes_stdin_and_devices_are_named_with_what_to_do() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let fifo = dir.path().join("pipe.mp4");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let hint = "RAVE reads the input more than once";
    let cases: [(&str, &str); 3] = [
        (fifo.to_str().unwrap(), "is a pipe (FIFO)"),
        ("-", "from stdin ('-') is not supported"),
        ("/dev/null", "is a device"),
    ];
    for (input, what) in cases {
        // Nobody writes to the FIFO: RAVE must say what it is without opening it.
        let o = rave()
            .args(["probe", input])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(err.contains(what) && err.contains(hint), "{input}: {err}");
        assert!(!err.contains("empty"), "{err}");
    }
    // A clip piped into /dev/stdin.
    let mut child = rave()
        .args(["upscale", "-i", "/dev/stdin", "-o"])
        .arg(dir.path().join("o.mp4"))
        .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = std::fs::read(&clip).unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut stdin, &bytes);
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("/dev/stdin: is stdin, a pipe") && err.contains(hint),
        "{err}"
    );
}

#[test]
fn probe_json_describes_the_clip() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "64x48", 10);
    let o = run(&["probe", clip.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["video"]["width"], 64);
    assert_eq!(v["video"]["height"], 48);
    assert_eq!(v["video"]["codec"], "h264");
    assert_eq!(v["video"]["frame_count"], 10);
    assert_eq!(v["video"]["frame_rate"], 25.0);
    assert_eq!(v["video"]["color_matrix"], "bt709");
    assert_eq!(v["video"]["bit_depth"], 8);
    assert_eq!(v["streams"].as_array().unwrap().len(), 2);
    assert_eq!(v["streams"][1]["kind"], "audio");
    let o = run(&["probe", clip.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("64x48"));
}

#[test]
fn probe_estimates_the_frames_of_a_matroska_video_track_not_of_the_file() {
    // Matroska declares no frame count, and its length is where the timeline ends: a clip
    // whose 40 frames start at 1.5 s says 3.1 s. 78 frames were estimated before.
    let dir = scratch();
    let clip = dir.path().join("late.mkv");
    lavfi_clip(
        &clip,
        &["testsrc2=s=64x48:r=25:d=1.6"],
        &[
            "-output_ts_offset",
            "1.5",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
        ],
    );
    let o = run(&["probe", clip.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["video"]["frame_count_estimated"], true);
    assert_eq!(v["video"]["frame_count"], 40, "{v}");
    let span = v["video"]["duration_s"].as_f64().unwrap();
    assert!((span - 1.6).abs() < 0.01, "{span}");
    // Audio that runs on after the video: the file ends with it, the video's track before.
    let long_audio = dir.path().join("long_audio.mkv");
    lavfi_clip(
        &long_audio,
        &["testsrc2=s=64x48:r=25:d=2", "sine=d=4"],
        &["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libopus"],
    );
    let o = run(&["probe", long_audio.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["video"]["frame_count"], 50, "{v}");
}

#[test]
fn benchmark_json_reports_each_stage_and_the_bottleneck() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "48x32", 6);
    let model = fixture("nearest_x2.onnx");
    let benchmark = |extra: &[&str]| {
        rave()
            .args(["benchmark", "-i", clip.to_str().unwrap(), "-m"])
            .arg(&model)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = benchmark(&["--frames", "4", "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["frames"], 4);
    assert_eq!(v["output_size"], serde_json::json!([96, 64]));
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 5);
    for s in stages {
        assert_eq!(s["frames"], 4, "{s}");
        assert!(s["capacity_fps"].as_f64().unwrap() > 0.0, "{s}");
    }
    let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&v["bottleneck"].as_str().unwrap()));
    assert!(v["fps"].as_f64().unwrap() > 0.0);
    // The three measurements: inference alone, null encode, full pipeline.
    assert_eq!(v["inference_only"]["frames"], 4);
    assert!(v["inference_only"]["fps"].as_f64().unwrap() > 0.0);
    assert_eq!(v["null_encode"]["frames"], 4);
    assert_eq!(v["full"]["frames"], 4);
    assert!(v["null_vs_inference"].as_f64().unwrap() > 0.0);
    assert!(v["full_vs_bound"].as_f64().unwrap() > 0.0);
    assert!(v["backend_reason"].as_str().is_some());
    let o = benchmark(&[]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("bottleneck"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("stages of the full pipeline (libx264 crf 18 preset veryfast)"),
        "{}",
        stdout(&o)
    );
    // NVENC's presets are not the software encoders'; the advice names no option
    // benchmark lacks.
    let o = benchmark(&["--preset", "p4"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o)
            .contains("p1..p7 are NVENC's presets; rave benchmark measures the software encoders")
            && !stderr(&o).contains("--encoder"),
        "{}",
        stderr(&o)
    );
    // The encode stage of the codec the user will write (its advice names --codec too).
    for (codec, encoder, preset) in [("hevc", "libx265", "veryfast"), ("av1", "libsvtav1", "8")] {
        let o = benchmark(&["--frames", "2", "--codec", codec, "--json"]);
        assert_exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["full_report"]["mux"]["encoder"], encoder, "{codec}");
        assert_eq!(v["full_report"]["encoder"]["preset"], preset, "{codec}");
    }
}

#[test]
fn devices_reports_gpus_or_says_plainly_there_is_none() {
    let o = run(&["devices", "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let gpus = v["gpus"].as_array().unwrap();
    if gpus.is_empty() {
        let why = v["no_gpu_reason"]
            .as_str()
            .expect("a reason when there is no GPU");
        assert!(why.contains("no usable GPU"), "{why}");
        let o = run(&["devices"]);
        assert_exit(&o, 0);
        assert!(stdout(&o).contains("runs on the CPU"), "{}", stdout(&o));
        // The CPU path needs ONNX Runtime: which library loads is said.
        assert!(stdout(&o).contains("ONNX Runtime: /"), "{}", stdout(&o));
    } else {
        assert!(gpus[0]["name"].as_str().is_some_and(|n| !n.is_empty()));
        assert!(v["nvenc"].as_array().is_some_and(|a| !a.is_empty()));
    }
    assert!(v["onnxruntime_library"].as_str().is_some(), "{v}");
}

#[test]
fn devices_fails_where_onnx_runtime_does_not_load() {
    // Before: without a GPU, "RAVE runs on the CPU here" and exit 0, though nothing could run.
    for json in [false, true] {
        let mut cmd = rave();
        cmd.arg("devices")
            .env("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so");
        if json {
            cmd.arg("--json");
        }
        let o = cmd.output().unwrap();
        assert_exit(&o, 6);
        let text = stdout(&o);
        assert!(
            text.contains("/nonexistent/libonnxruntime.so (from ORT_DYLIB_PATH): cannot use it as the ONNX Runtime library"),
            "{text}"
        );
        assert!(!text.contains("runs on the CPU"), "{text}");
        if json {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(v["onnxruntime_library"].is_null(), "{v}");
            assert_eq!(
                (&v["error"]["kind"], &v["error"]["exit_code"]),
                (&"runtime_library".into(), &6.into()),
                "{v}"
            );
        }
    }
}
