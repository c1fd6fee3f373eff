//! Helpers of the segment tests: the CPU run with a JSON report, its segment counts, and a
//! clip of real photographs with a keyframe every 10 frames.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::*;

/// On the CPU, no progress display, the report as JSON on stdout.
pub const CPU: &[&str] = &["--device", "cpu", "--progress", "off", "--json"];

/// `rave upscale` on the CPU with `extra`, and its JSON report (exit 0 asserted).
pub fn upscale_ok(input: &Path, output: &Path, model: &Path, extra: &[&str]) -> Value {
    let o = upscale(input, output, model, &[CPU, extra].concat());
    assert_exit(&o, 0);
    report(&o)
}

/// The JSON report on stdout.
pub fn report(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| {
        panic!(
            "report: {e}\nstdout:\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// The report's segment counts: (total, processed, reused, jobs).
pub fn segment_counts(v: &Value) -> (u64, u64, u64, u64) {
    let s = &v["segments"];
    let n = |k: &str| {
        s[k].as_u64()
            .unwrap_or_else(|| panic!("segments.{k} in {s}"))
    };
    (n("total"), n("processed"), n("reused"), n("jobs"))
}

/// Re-encode `src`'s video with `video` (codec and GOP options), copying its audio.
pub fn reencode(src: &Path, dst: &Path, video: &[&str]) {
    let mut args = vec!["-i", src.to_str().unwrap(), "-map", "0", "-c", "copy"];
    args.extend_from_slice(video);
    args.push(dst.to_str().unwrap());
    ffmpeg(&args);
}

/// `src` re-encoded into `dst` (audio copied) with a keyframe every 10 frames and none at
/// scene cuts: segments of `--segment-frames 10` are 10 frames each.
pub fn reencode_gop10(src: &Path, dst: &Path) {
    reencode(
        src,
        dst,
        &[
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-g",
            "10",
            "-keyint_min",
            "10",
            "-sc_threshold",
            "0",
        ],
    );
}

/// A clip of real photographs with AAC audio, 64x48, `frames` frames, a keyframe every 10
/// (none at scene cuts).
pub fn photo_clip_gop10(dir: &Path, frames: u32) -> PathBuf {
    let src = make_photo_clip(dir, "photos.mp4", 64, 48, frames);
    let input = dir.join("in.mp4");
    reencode_gop10(&src, &input);
    input
}

/// One CSV row per packet of `stream` (`a:0`, `v:0`) with ffprobe's packet `fields`, and the
/// MD5 of the payload last when `hashed`.
pub fn packet_rows(path: &Path, stream: &str, fields: &str, hashed: bool) -> Vec<String> {
    let entries = format!("packet={fields}");
    let mut args = vec!["-select_streams", stream, "-show_entries", &entries];
    if hashed {
        args.extend(["-show_data_hash", "MD5"]);
    }
    args.extend(["-of", "csv=p=0"]);
    ffprobe(path, &args)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// (pts, size, MD5 of the payload) of every packet of the first audio stream.
pub fn audio_packets(path: &Path) -> Vec<String> {
    packet_rows(path, "a:0", "pts,size,data_hash", true)
}

/// (pts, dts, size, MD5 of the payload) of every video packet.
pub fn video_packets(path: &Path) -> Vec<String> {
    packet_rows(path, "v:0", "pts,dts,size,data_hash", true)
}

/// MD5 of every decoded video frame with its timestamp (no frame dropped or duplicated).
pub fn framemd5(path: &Path) -> String {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:v",
            "-vsync",
            "passthrough",
            "-f",
            "framemd5",
            "-",
        ])
        .output()
        .expect("ffmpeg");
    assert!(o.status.success(), "framemd5: {}", stderr(&o));
    stdout(&o)
}

/// Segments marked done in the manifest of `work`, and segments in all (`None` while there
/// is no manifest to read).
pub fn manifest_done(work: &Path) -> Option<(usize, usize)> {
    let text = std::fs::read_to_string(work.join("manifest.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let segments = v["segments"].as_array()?;
    let done = segments.iter().filter(|s| s["state"] == "done").count();
    Some((done, segments.len()))
}
