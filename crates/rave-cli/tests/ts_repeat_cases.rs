//! An MPEG-TS made of segments, one written twice in a row (an HLS downloader that fetched
//! a segment again and joined what it fetched): the repeat's timestamps go back to where
//! the segment's did, so it was taken for a join whose clocks overlap (or, for a segment
//! longer than a second, for a restart), kept, and the segment played twice with exit 0.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The segments (`seconds` long each) of a 4-s 96x64 H.264 clip (a keyframe every
/// `seconds`) with 48 kHz AAC, each its own transport stream as a segment muxer writes
/// them, in `dir`/seg; and the clip as one MPEG-TS.
fn segments(dir: &Path, seconds: &str, frames: &str) -> (PathBuf, Vec<PathBuf>) {
    let clip = dir.join("clip.ts");
    lavfi_clip(
        &clip,
        &[
            "testsrc2=size=96x64:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &[
            "-c:v",
            "libx264",
            "-bf",
            "0",
            "-g",
            frames,
            "-sc_threshold",
            "0",
            "-c:a",
            "aac",
        ],
    );
    let seg = dir.join("seg");
    std::fs::create_dir_all(&seg).unwrap();
    let pattern = seg.join("s%03d.ts");
    ffmpeg(&[
        "-i",
        clip.to_str().unwrap(),
        "-c",
        "copy",
        "-f",
        "segment",
        "-segment_time",
        seconds,
        "-reset_timestamps",
        "0",
        pattern.to_str().unwrap(),
    ]);
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&seg)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    assert!(parts.len() >= 2, "{} segments", parts.len());
    (clip, parts)
}

/// `parts` joined end to end into `out`, the part at `repeated` written `times` times.
fn joined_with_repeat(parts: &[PathBuf], repeated: usize, times: usize, out: &Path) {
    let mut order: Vec<&Path> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let n = if i == repeated { times } else { 1 };
        order.extend(std::iter::repeat_n(p.as_path(), n));
    }
    cat_files(&order, out);
}

/// Segments of 0.4 s, one written twice or three times, and segments of 2 s (the repeat
/// going back further than a join's overlap), one written twice: refused as damage, the
/// repeat said; with --allow-corrupt the frames and audio packets of the segments joined
/// once each. The segments joined once each are upscaled as the clip is, nothing said.
#[test]
fn a_segment_written_twice_in_a_row_is_dropped_as_duplicated_data() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    for (seconds, frames, repeated, times) in
        [("0.4", "10", 4, 2), ("0.4", "10", 2, 3), ("2", "50", 0, 2)]
    {
        let what = format!("{seconds}-s segment {repeated} written {times} times");
        let (clip, parts) = segments(dir.path(), seconds, frames);
        let want = dir.path().join("want.mkv");
        let o = upscale(&clip, &want, &model, &["--overwrite"]);
        assert_exit(&o, 0);

        let once = dir.path().join("once.ts");
        cat_files(
            &parts.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
            &once,
        );
        let out = dir.path().join("once.mkv");
        let o = upscale(&once, &out, &model, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("repeats"), "{what}: {}", stderr(&o));
        assert_eq!(frame_times(&out), frame_times(&want), "{what}");

        let repeat = dir.path().join("repeat.ts");
        joined_with_repeat(&parts, repeated, times, &repeat);
        let out = dir.path().join("repeat.mkv");
        let o = upscale(&repeat, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("the input repeats itself") && !err.contains("restart"),
            "{what}: {err}"
        );
        let o = upscale(&repeat, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        assert_eq!(frame_times(&out), frame_times(&want), "{what}");
        assert_same_audio(&out, &want, &what);
        std::fs::remove_dir_all(dir.path().join("seg")).unwrap();
    }
}
