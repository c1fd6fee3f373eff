//! The batch tests' helpers (several inputs, folder input): clips, a truncated input, the
//! batch document, a one-line refusal.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::*;

/// Frames in each generated clip.
pub const FRAMES: usize = 3;

/// `rave upscale` with the fast test model on the CPU, then `args`.
pub fn upscale_with(args: &[&str]) -> Output {
    let m = fixture("nearest_x2.onnx");
    let mut all = vec!["upscale", "-m", m.to_str().unwrap(), "--device", "cpu"];
    all.extend_from_slice(args);
    run(&all)
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A clip of `FRAMES` frames; `.mkv`/`.avi` are remuxed from an MP4 made beside them.
pub fn clip(dir: &Path, name: &str) -> PathBuf {
    if name.ends_with(".mp4") {
        return make_clip(dir, name, "32x32", FRAMES as u32);
    }
    let scratch = scratch();
    let mp4 = make_clip(scratch.path(), "src.mp4", "32x32", FRAMES as u32);
    let path = dir.join(name);
    ffmpeg(&["-i", s(&mp4), "-c", "copy", s(&path)]);
    path
}

/// The first half of a clip: FFmpeg cannot open it (the MP4 index is at its end), and RAVE
/// says it is truncated.
pub fn truncated(dir: &Path, name: &str) -> PathBuf {
    let scratch = scratch();
    let bytes = std::fs::read(clip(scratch.path(), "whole.mp4")).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    path
}

/// A folder `in` in `dir` holding a clip under each of `names` (see [`clip`]).
pub fn input_folder(dir: &Path, names: &[&str]) -> PathBuf {
    let input = dir.join("in");
    std::fs::create_dir(&input).unwrap();
    for name in names {
        clip(&input, name);
    }
    input
}

/// The batch document printed with --json.
pub fn document(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// A refusal: the exit code, one line on stderr containing `needle`, nothing on stdout.
pub fn assert_refused(o: &Output, code: i32, needle: &str) {
    assert_exit(o, code);
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} in {err}");
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}
