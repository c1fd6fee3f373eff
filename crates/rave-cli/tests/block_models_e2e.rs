//! A model whose sides must be multiples of a block (a pixel-unshuffle stage, as Real-ESRGAN's
//! x1 and x2 models have) on a clip whose sides are not, or a fixed-size model larger than
//! the clip: the frame is padded to the next multiple (or the model's size) by mirroring and
//! the padding cut from the output, so the picture is what the model makes of the frame; the
//! first failed on the first frame before, the second was refused. The fixture is nearest x2
//! behind a space-to-depth/depth-to-space pair of block 4, so its output must equal the
//! plain nearest x2 model's exactly.

mod common;

use common::*;

const W: u32 = 70;
const H: u32 = 38;
const FRAMES: u32 = 4;

/// The CPU path, lossless, with the JSON report.
const CPU: [&str; 7] = CPU_LOSSLESS_JSON;

/// A picture-like clip of `w` x `h` in `dir`, upscaled by the plain nearest x2 model and by
/// `model` with `extra` options: (the clip, the report of `model`'s run, its output decoded,
/// the plain model's output decoded).
fn against_nearest(
    dir: &std::path::Path,
    (w, h, frames): (u32, u32, u32),
    model: &str,
    extra: &[&str],
) -> (std::path::PathBuf, serde_json::Value, Vec<u8>, Vec<u8>) {
    let input = make_photo_clip(dir, "in.mp4", w, h, frames);
    let whole = dir.join("whole.mkv");
    json_report(&upscale(&input, &whole, &fixture("nearest_x2.onnx"), &CPU));
    let out = dir.join(format!("{model}.mkv"));
    let r = json_report(&upscale(
        &input,
        &out,
        &fixture(model),
        &[&CPU[..], extra].concat(),
    ));
    (input, r, decode_yuv420(&out), decode_yuv420(&whole))
}

#[test]
fn a_block_model_pads_frames_that_are_no_multiple_and_gives_the_frame_back() {
    let dir = scratch();
    let (input, r, padded, reference) =
        against_nearest(dir.path(), (W, H, FRAMES), "blocks4_x2.onnx", &[]);
    assert_eq!(r["model"]["side_multiple"], 4);
    assert_eq!(r["frames_out"], FRAMES);
    assert_eq!(r["output_size"], serde_json::json!([2 * W, 2 * H]));
    let t = &r["tiling"];
    // Padded, not cut: one tile of the padded size.
    assert_eq!(t["tiled"], false, "{t}");
    assert_eq!(t["tile"], serde_json::json!([72, 40]));
    assert_eq!(t["grid"], serde_json::json!([1, 1]));
    // One tile has no neighbour: no overlap (the default 16 refused frames padded to 32
    // px or less, and any --tile-overlap of half the padded frame).
    assert_eq!(t["overlap"], 0);
    assert_eq!(
        t["reason"],
        "the model takes inputs whose sides are multiples of 4: the 70x38 frame is padded to 72x40 (mirrored at its right and bottom borders) and the padding cut from the output"
    );
    assert!(padded == reference, "padded run differs");
    let padded_file = dir.path().join("blocks4_x2.onnx.mkv");
    assert_eq!(frame_times(&padded_file), frame_times(&input), "timestamps");

    // Tiles of a size the model takes: cut across, padded down.
    let tiled = dir.path().join("tiled.mkv");
    let extra = [&CPU[..], &["--tile", "42x42"]].concat();
    let r = json_report(&upscale(
        &input,
        &tiled,
        &fixture("blocks4_x2.onnx"),
        &extra,
    ));
    let t = &r["tiling"];
    assert_eq!(t["tile"], serde_json::json!([40, 40]), "{t}");
    assert_eq!(t["grid"], serde_json::json!([3, 1]), "{t}");
    assert!(
        t["reason"]
            .as_str()
            .unwrap()
            .starts_with("--tile 42x42, rounded to 40x40; the model takes inputs whose sides are multiples of 4: the 70x38 frame is padded to 70x40 (mirrored at its bottom border)"),
        "{t}"
    );
    // Blending overlapping tiles rounds in float: within a step of 8 bits, as in tiling_e2e.
    let db = psnr(&decode_yuv420(&tiled), &reference);
    println!("--tile 42x42 vs whole: {db:.1} dB");
    assert!(db >= 45.0, "{db:.1} dB");
}

#[test]
fn a_frame_smaller_than_the_block_is_padded_past_itself() {
    // A 6x4 frame for a model of blocks of 32: one 32x32 tile, the frame mirrored back and
    // forth across it; with a --tile-overlap that one tile cannot share with anything.
    let dir = scratch();
    let extra = ["--tile-overlap", "20"];
    let (_, r, padded, reference) =
        against_nearest(dir.path(), (6, 4, 2), "blocks32_x2.onnx", &extra);
    assert_eq!(r["tiling"]["tile"], serde_json::json!([32, 32]), "{r}");
    assert!(padded == reference, "padded run differs");
}

#[test]
fn a_fixed_size_model_larger_than_the_frame_gets_it_padded() {
    // A 32x32 clip through a model of fixed 64x48 inputs: it was refused as "smaller than
    // one input"; padded to 64x48, it is the plain model's picture.
    let dir = scratch();
    let (_, r, padded, reference) =
        against_nearest(dir.path(), (32, 32, 2), "fixed_64x48_x2.onnx", &[]);
    assert_eq!(
        r["tiling"]["reason"],
        "the model takes fixed 64x48 inputs: the 32x32 frame is padded to 64x48 (mirrored at its right and bottom borders) and the padding cut from the output"
    );
    assert_eq!(r["output_size"], serde_json::json!([64, 64]));
    assert!(padded == reference, "padded run differs");
}

#[test]
fn a_block_model_on_a_multiple_runs_whole_and_tile_off_on_another_is_refused() {
    let dir = scratch();
    let even = make_clip(dir.path(), "even.mp4", "72x40", 2);
    let r = json_report(&upscale(
        &even,
        &dir.path().join("even.mkv"),
        &fixture("blocks4_x2.onnx"),
        &CPU,
    ));
    assert_eq!(r["tiling"]["tiled"], false);
    assert_eq!(r["tiling"]["reason"], "the model takes the whole frame");

    let odd = make_clip(dir.path(), "odd.mp4", "70x38", 2);
    let out = dir.path().join("odd.mkv");
    let o = upscale(
        &odd,
        &out,
        &fixture("blocks4_x2.onnx"),
        &["--device", "cpu", "--tile", "off"],
    );
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert!(
        err.contains("model blocks4_x2 takes inputs whose sides are multiples of 4, the video is 70x38; --tile off gives it whole frames (--tile auto pads it)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!out.exists());
}
