//! Clean inputs of the kinds users actually have must never be refused as damaged: files
//! whose timestamps start after zero, FLV (whose muxer shifts everything past zero),
//! MP4 cut with `ffmpeg -ss ... -c copy` (an edit list whose first packets are only decoded
//! to rebuild the picture, then discarded). Each one is upscaled completely: every frame and
//! every audio packet of the source is in the output.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Frames and audio packets of `path`, as ffprobe counts them.
fn counts(path: &Path) -> (usize, usize) {
    let frames = frame_times(path).len();
    let audio = ffprobe(
        path,
        &[
            "-select_streams",
            "a:0",
            "-show_entries",
            "packet=pts_time",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .count();
    (frames, audio)
}

/// `rave upscale` of `input` into `.mkv` must succeed with every frame and audio packet.
fn assert_complete(input: &Path) {
    let output = PathBuf::from(format!("{}.out.mkv", input.display()));
    let o = upscale(
        input,
        &output,
        &fixture("nearest_x2.onnx"),
        &["--device", "cpu"],
    );
    assert_exit(&o, 0);
    assert_eq!(
        counts(&output),
        counts(input),
        "{}: frames and audio packets",
        input.display()
    );
}

/// A 2 s clip with B-frames and AAC, made with `extra` output options into `name`.
fn clip(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25:duration=2",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000:duration=2",
        "-c:v",
        "libx264",
        "-bf",
        "2",
        "-g",
        "10",
        "-c:a",
        "aac",
    ];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
    path
}

#[test]
fn clips_whose_timestamps_start_after_zero_are_complete() {
    let dir = scratch();
    for name in ["offset.mkv", "offset.mp4", "offset.mov", "offset.flv"] {
        let input = clip(dir.path(), name, &["-output_ts_offset", "1.5"]);
        assert_complete(&input);
    }
}

#[test]
fn a_plain_flv_is_complete() {
    let dir = scratch();
    assert_complete(&clip(dir.path(), "plain.flv", &[]));
}

#[test]
fn an_mp4_cut_with_stream_copy_is_complete() {
    let dir = scratch();
    let source = clip(dir.path(), "source.mp4", &[]);
    let cut = dir.path().join("cut.mp4");
    ffmpeg(&[
        "-ss",
        "0.5",
        "-i",
        source.to_str().unwrap(),
        "-c",
        "copy",
        cut.to_str().unwrap(),
    ]);
    assert_complete(&cut);
}
