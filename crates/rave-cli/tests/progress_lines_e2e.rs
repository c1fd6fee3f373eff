//! `--progress bar` where stderr is a log file or a pipe: the help says "always", and a bar
//! drawn there shows nothing (indicatif hides it), so the numbers come as plain lines. The
//! default (`auto`) shows none there; Ctrl+C adds its line without an empty one.

mod common;

use common::*;

#[test]
fn progress_bar_into_a_pipe_is_plain_lines_and_auto_is_silent() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 20);
    let m = fixture("nearest_x2.onnx");
    let out = dir.path().join("bar.mp4");
    let o = upscale(&clip, &out, &m, &["--progress", "bar"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("rave: progress: "))
        .collect();
    assert_eq!(
        lines.first(),
        Some(&"rave: progress: started, 20 frames"),
        "{err}"
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("rave: progress: 20/20 (100%) frames, ")),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "no escape codes in a log: {err:?}");
    let o = upscale(&clip, &dir.path().join("auto.mp4"), &m, &[]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("rave: progress"), "{}", stderr(&o));
}

/// Ctrl+C in plain-line mode: the stopping line follows the progress lines with no empty
/// line before it (that one only moves below a bar on a terminal).
#[test]
fn ctrl_c_into_a_log_writes_no_empty_line() {
    use std::io::{BufRead, BufReader};
    let dir = scratch();
    let input = make_photo_clip(dir.path(), "in.mp4", 640, 360, 150);
    let mut child = rave()
        .args(["upscale", "-i", input.to_str().unwrap(), "-o"])
        .arg(dir.path().join("out.mp4"))
        .arg("-m")
        .arg(fixture("nearest_x2.onnx"))
        .args(["--preset", "veryslow", "--progress", "bar"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.starts_with("rave: progress: started");
        seen.push(line);
        if started {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: kill(2) on the child's own process id (not yet reaped); it reads no memory.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().unwrap();
    let err = seen.join("\n");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("rave: stopping"), "{err}");
    assert!(!seen.iter().any(|l| l.is_empty()), "an empty line: {err:?}");
}
