//! A panic (a bug) is said in one line in the run's forms, with exit 1 as documented for
//! internal errors: never Rust's backtrace note and exit 101.

mod common;

use common::*;

#[test]
fn a_panic_is_one_line_and_exit_1_in_every_output_form() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let out = dir.path().join("o.mp4");
    let panicking = |extra: &[&str]| {
        rave()
            .args(["upscale", "-i", clip.to_str().unwrap(), "-o"])
            .arg(&out)
            .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
            .args(extra)
            .env("RAVE_INJECT_PANIC", "1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap()
    };
    let said = "a bug in RAVE (please report it with the command that led to it): panicked at ";
    let o = panicking(&[]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rave: error: internal invariant violated: "),
        "{err}"
    );
    assert!(
        err.contains(said) && err.contains("injected by RAVE_INJECT_PANIC"),
        "{err}"
    );
    assert!(!err.contains("backtrace"), "{err}");

    let o = panicking(&["--json"]);
    assert_exit(&o, 1);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["error"]["exit_code"], 1);
    assert_eq!(v["error"]["family"], "internal");
    assert!(
        v["error"]["message"].as_str().unwrap().contains(said),
        "{v}"
    );
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));

    let o = panicking(&["--progress", "jsonl"]);
    assert_exit(&o, 1);
    let events = jsonl_events(&o);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "log" && e["level"] == "ERROR")
    );
    let last = events.last().expect("events");
    assert_eq!(last["event"], "error", "{last}");
    assert_eq!(last["error"]["exit_code"], 1);
    assert!(!out.exists());

    // On a thread (where the stages and segment workers run): still one line, the
    // thread's own panic, not the scope's "a scoped thread panicked" after it.
    let o = rave()
        .args(["upscale", "-i", clip.to_str().unwrap(), "-o"])
        .arg(&out)
        .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
        .env("RAVE_INJECT_PANIC", "thread")
        .output()
        .unwrap();
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("injected on a thread by RAVE_INJECT_PANIC"),
        "{err}"
    );
}
