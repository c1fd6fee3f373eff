//! Shared helpers of the CLI tests: running `rave`, generating clips with the ffmpeg CLI
//! (clips.rs), and reading outputs back with ffprobe (ffprobe.rs) and ffmpeg (independent
//! of RAVE's own code); the segment tests' runs and clips (segments.rs); a run in the background, interrupted
//! (running.rs).

#![allow(dead_code)]

pub mod batch;
mod clips;
mod ffprobe;
mod hdr;
pub mod running;
mod segments;

// Like the helpers themselves, each test binary uses only some of these.
#[allow(unused_imports)]
pub use clips::*;
#[allow(unused_imports)]
pub use ffprobe::*;
#[allow(unused_imports)]
pub use hdr::*;
#[allow(unused_imports)]
pub use segments::*;

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

/// RAVE's install folder (scripts/setup.sh fills it): RAVE_HOME, else the default.
pub fn rave_home() -> PathBuf {
    std::env::var_os("RAVE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".local/share/rave")
        })
}

/// The installed model folder (scripts/setup.sh fills it).
pub fn installed_model(name: &str) -> PathBuf {
    let p = rave_home().join("models").join(format!("{name}.onnx"));
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

/// `rave upscale` options for the CPU path, lossless, with the JSON report and no progress:
/// runs whose decoded output is compared with another's.
pub const CPU_LOSSLESS_JSON: [&str; 7] = [
    "--device",
    "cpu",
    "--progress",
    "off",
    "--crf",
    "0",
    "--json",
];

/// The `--json` report of a run that must have succeeded (exit 0).
pub fn json_report(o: &Output) -> serde_json::Value {
    assert_exit(o, 0);
    serde_json::from_str(&stdout(o)).expect("JSON report")
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Each line of a `--progress jsonl` stream, parsed (a line that is not JSON fails the test).
pub fn parse_jsonl(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect()
}

/// The `--progress jsonl` events of a finished run's stderr.
pub fn jsonl_events(o: &Output) -> Vec<serde_json::Value> {
    parse_jsonl(&stderr(o))
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

/// The arguments of `rave upscale -i INPUT -o OUTPUT -m MODEL EXTRA...`.
pub fn upscale_args<'a>(
    input: &'a Path,
    output: &'a Path,
    model: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
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
    args
}

/// `rave upscale -i INPUT -o OUTPUT -m MODEL EXTRA...`.
pub fn upscale(input: &Path, output: &Path, model: &Path, extra: &[&str]) -> Output {
    run(&upscale_args(input, output, model, extra))
}

/// The names of the entries of `dir`, sorted.
pub fn sorted_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
