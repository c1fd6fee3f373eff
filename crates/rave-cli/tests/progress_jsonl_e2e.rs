//! `--progress jsonl` is a stream a program reads: every line on stderr is one JSON object,
//! the failures included. A run that fails ends with an `error` event carrying the same
//! object `--json` prints (code, kind, family, exit code, message); a batch names the input
//! that failed; a usage error is an event too.

mod common;

use std::path::Path;

use common::*;

/// The run's last event, which must be its error, with the exit code the run ended with.
fn last_error(o: &std::process::Output, code: i32) -> serde_json::Value {
    assert_exit(o, code);
    let all = jsonl_events(o);
    let last = all.last().expect("an event").clone();
    assert_eq!(last["event"], "error", "{all:?}");
    assert_eq!(last["error"]["exit_code"], code, "{last}");
    last
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn an_input_that_cannot_be_read_ends_the_stream_with_an_error_event() {
    let dir = scratch();
    let missing = dir.path().join("missing.mp4");
    let m = fixture("nearest_x2.onnx");
    let o = upscale(
        &missing,
        &dir.path().join("out.mkv"),
        &m,
        &["--progress", "jsonl"],
    );
    let e = last_error(&o, 3);
    assert_eq!(e["error"]["family"], "input", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains(s(&missing)),
        "{e}"
    );
    // With --json too, the same object is on stdout.
    let o = upscale(
        &missing,
        &dir.path().join("out.mkv"),
        &m,
        &["--progress", "jsonl", "--json"],
    );
    let e = last_error(&o, 3);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("the --json error");
    assert_eq!(doc["error"], e["error"]);
}

#[test]
fn a_run_that_fails_midway_reports_its_progress_then_the_error() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 6);
    let output = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let args = upscale_args(
        &input,
        &output,
        &m,
        &["--progress", "jsonl", "--device", "cpu", "--jobs", "1"],
    );
    let o = rave()
        .args(&args)
        .env("RAVE_INJECT_FAILURE", "3")
        .output()
        .expect("rave runs");
    let e = last_error(&o, 6);
    assert_eq!(e["error"]["kind"], "cuda", "{e}");
    let all = jsonl_events(&o);
    assert_eq!(all[0]["event"], "started", "{all:?}");
    assert!(all.iter().any(|e| e["event"] == "progress"), "{all:?}");
    assert!(!all.iter().any(|e| e["event"] == "finished"), "{all:?}");
    assert!(!output.exists());
}

#[test]
fn a_usage_error_is_an_event_too() {
    let o = run(&[
        "upscale",
        "-i",
        "a.mp4",
        "-o",
        "b.mp4",
        "--progress",
        "jsonl",
        "--tile",
        "x",
    ]);
    let e = last_error(&o, 2);
    assert_eq!(e["error"]["kind"], "usage", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("--tile"),
        "{e}"
    );
    let o = run(&["upscale", "--progress=jsonl", "--no-such-flag"]);
    last_error(&o, 2);
}

#[test]
fn a_batch_names_the_input_that_failed_in_its_error_event() {
    let dir = scratch();
    let d = dir.path();
    let good = make_clip(d, "good.mp4", "32x32", 3);
    let bad = d.join("bad.mp4");
    std::fs::write(&bad, b"not a video").unwrap();
    let out = d.join("out");
    let m = fixture("nearest_x2.onnx");
    let o = run(&[
        "upscale",
        "-i",
        s(&bad),
        s(&good),
        "-o",
        s(&out),
        "-m",
        s(&m),
        "--device",
        "cpu",
        "--progress",
        "jsonl",
    ]);
    assert_exit(&o, 3);
    let all = jsonl_events(&o);
    let failed: Vec<_> = all.iter().filter(|e| e["event"] == "error").collect();
    assert_eq!(failed.len(), 1, "{all:?}");
    assert_eq!(failed[0]["input"], s(&bad), "{}", failed[0]);
    assert_eq!(failed[0]["error"]["family"], "input", "{}", failed[0]);
    // The good input still ran to its end, and only it finished.
    let finished: Vec<_> = all.iter().filter(|e| e["event"] == "finished").collect();
    assert_eq!(finished.len(), 1, "{all:?}");
    assert_eq!(finished[0]["status"], "complete");
    // The batch ends with its own event: the exit code and the count of each ending.
    let last = all.last().unwrap();
    assert_eq!(last["event"], "batch", "{all:?}");
    assert_eq!(last["exit_code"], 3);
    assert_eq!(
        (&last["inputs"]["done"], &last["inputs"]["failed"]),
        (&1.into(), &1.into())
    );
    assert!(out.join("good.mp4").exists());
}

#[test]
fn log_lines_are_log_events() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 3);
    let m = fixture("nearest_x2.onnx");
    let output = dir.path().join("out.mkv");
    let args = upscale_args(&input, &output, &m, &["--progress", "jsonl", "-v"]);
    let o = run(&args);
    assert_exit(&o, 0);
    let all = jsonl_events(&o);
    let logs: Vec<_> = all.iter().filter(|e| e["event"] == "log").collect();
    assert!(!logs.is_empty(), "-v logs the start-up: {all:?}");
    assert!(logs.iter().all(|e| e["level"] == "INFO"), "{logs:?}");
    assert_eq!(all.last().unwrap()["event"], "finished");
}

/// Workers open encoders while others report frames: an encoder library's stderr is caught
/// while it opens (descriptor 2 points at a file meanwhile), and RAVE's own events, written
/// to a copy of stderr taken at start-up, must all arrive whole. One-frame segments on two
/// workers open an encoder for every frame.
#[test]
fn every_event_arrives_whole_while_workers_open_encoders() {
    let dir = scratch();
    let input = dir.path().join("intra.mp4");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=32x24:rate=25",
        "-frames:v",
        "60",
        "-c:v",
        "libx264",
        "-g",
        "1",
        "-pix_fmt",
        "yuv420p",
        s(&input),
    ]);
    let m = fixture("nearest_x2.onnx");
    let output = dir.path().join("out.mkv");
    let opts = [
        "--progress",
        "jsonl",
        "--device",
        "cpu",
        "--segment-frames",
        "1",
        "--jobs",
        "2",
        "--threads",
        "1",
    ];
    let o = upscale(&input, &output, &m, &opts);
    assert_exit(&o, 0);
    let all = jsonl_events(&o);
    let progress = all.iter().filter(|e| e["event"] == "progress").count();
    assert_eq!(progress, 60, "one progress event a frame");
    assert_eq!(all.last().unwrap()["event"], "finished");
}
