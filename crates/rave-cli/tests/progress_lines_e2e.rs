//! `--progress bar` where stderr is a log file or a pipe: the help says "always", and a bar
//! drawn there shows nothing (indicatif hides it), so the numbers come as plain lines. The
//! default (`auto`) shows none there.

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
