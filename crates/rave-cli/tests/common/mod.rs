//! Shared helpers of the CLI tests: running `rave`, generating clips with the ffmpeg CLI,
//! and reading outputs back with ffprobe/ffmpeg (independent of RAVE's own code).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A checked-in fixture.
pub fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

/// The installed model folder (scripts/setup.sh fills it).
pub fn installed_model(name: &str) -> PathBuf {
    let home = std::env::var_os("RAVE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".local/share/rave")
        });
    let p = home.join("models").join(format!("{name}.onnx"));
    assert!(
        p.is_file(),
        "{} missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// A `rave` command.
pub fn rave() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rave"));
    c.env_remove("RAVE_LOG");
    c
}

/// Run `rave` with `args`.
pub fn run(args: &[&str]) -> Output {
    rave().args(args).output().expect("rave runs")
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert the exit code, showing the output when it differs.
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit code; stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Run the ffmpeg CLI; panic with its message on failure.
pub fn ffmpeg(args: &[&str]) {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-nostdin"])
        .args(args)
        .output()
        .expect("ffmpeg installed (scripts/setup.sh)");
    assert!(o.status.success(), "ffmpeg {args:?}: {}", stderr(&o));
}

/// Run ffprobe and return its stdout.
pub fn ffprobe(path: &Path, args: &[&str]) -> String {
    let o = Command::new("ffprobe")
        .args(["-v", "error"])
        .args(args)
        .arg(path)
        .output()
        .expect("ffprobe installed");
    assert!(o.status.success(), "ffprobe {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// One ffprobe entry of the first video stream, e.g. "width".
pub fn video_field(path: &Path, field: &str) -> String {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            &format!("stream={field}"),
            "-of",
            "csv=p=0",
        ],
    )
    .trim()
    .to_string()
}

/// Presentation times of every decoded video frame.
pub fn frame_times(path: &Path) -> Vec<String> {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "frame=pts_time",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .map(|l| l.trim_end_matches(',').to_string())
    .filter(|l| !l.is_empty())
    .collect()
}

/// (pts, dts, duration, sha256 of the payload) of every packet of the selected streams.
pub fn packets(path: &Path, select: &str) -> Vec<String> {
    ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            "packet=pts_time,dts_time,duration_time,data_hash",
            "-show_data_hash",
            "SHA256",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// Decode every frame of `path` (no frame dropped or duplicated) to raw `pix_fmt` bytes
/// with the ffmpeg CLI.
fn decode_raw(path: &Path, pix_fmt: &str) -> Vec<u8> {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:v:0",
            "-vsync",
            "passthrough",
            "-f",
            "rawvideo",
            "-pix_fmt",
            pix_fmt,
            "-",
        ])
        .output()
        .expect("ffmpeg");
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// Every frame of `path` as packed RGB24.
pub fn decode_rgb(path: &Path) -> Vec<u8> {
    decode_raw(path, "rgb24")
}

/// Every frame of `path` as planar yuv420p.
pub fn decode_yuv420(path: &Path) -> Vec<u8> {
    decode_raw(path, "yuv420p")
}

/// Temporary output files left in `dir` (a finished or failed run must leave none).
pub fn temp_files_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// A small H.264 + AAC MP4 of moving test content (`frames` frames at 25 fps), tagged BT.709.
pub fn make_clip(dir: &Path, name: &str, size: &str, frames: u32) -> PathBuf {
    let path = dir.join(name);
    let secs = format!("{}", f64::from(frames) / 25.0);
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &format!("testsrc2=size={size}:rate=25:duration={secs}"),
        "-f",
        "lavfi",
        "-i",
        &format!("sine=frequency=440:sample_rate=48000:duration={secs}"),
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-crf",
        "12",
        "-pix_fmt",
        "yuv420p",
        "-color_primaries",
        "bt709",
        "-color_trc",
        "bt709",
        "-colorspace",
        "bt709",
        "-c:a",
        "aac",
        "-b:a",
        "96k",
        "-shortest",
        path.to_str().unwrap(),
    ]);
    path
}

/// A scratch folder removed when dropped.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("rave-test-")
        .tempdir()
        .expect("tempdir")
}

/// PSNR in dB between two equally long 8-bit buffers.
pub fn psnr(a: &[u8], b: &[u8]) -> f64 {
    rave_cuda::quality::psnr(a, b, 255.0)
}

/// A clip of real photographs (pan and zoom) with stereo AAC, by scripts/make_sample_clip.sh.
pub fn make_photo_clip(dir: &Path, name: &str, w: u32, h: u32, frames: u32) -> PathBuf {
    let path = dir.join(name);
    let o = Command::new("bash")
        .arg(repo().join("scripts/make_sample_clip.sh"))
        .arg(&path)
        .args([w.to_string(), h.to_string(), frames.to_string()])
        .output()
        .expect("bash");
    assert!(o.status.success(), "make_sample_clip.sh: {}", stderr(&o));
    path
}

/// `rave upscale -i INPUT -o OUTPUT -m MODEL EXTRA...`.
pub fn upscale(input: &Path, output: &Path, model: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "upscale",
        "-i",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// Packets of the selected stream, however damaged (ffprobe may not read their timestamps).
pub fn packet_count(path: &Path, select: &str) -> usize {
    ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            "packet=size",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .filter(|l| !l.trim_matches(',').is_empty())
    .count()
}
