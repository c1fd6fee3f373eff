//! The user's files under signals and concurrent runs: the input is never touched, nothing is
//! replaced without --overwrite, two runs on one output cannot both succeed, and no temporary
//! file outlives its run (a double Ctrl+C removes it; a SIGKILLed run's is swept by the next).

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::running::Running;
use common::*;

/// A clip that takes the installed model long enough per frame (one thread) to interrupt.
fn slow_clip(dir: &Path, name: &str) -> PathBuf {
    make_photo_clip(dir, name, 160, 96, 150)
}

/// One inference thread, and the report as JSON on stdout.
const SLOW: &[&str] = &["--threads", "1", "--json"];

#[test]
fn ctrl_c_with_a_partial_named_input_keeps_the_input_and_an_existing_partial() {
    let dir = scratch();
    let d = dir.path();
    // The input is what an earlier interrupted run left: clip.partial.mp4.
    let input = slow_clip(d, "clip.partial.mp4");
    let input_bytes = std::fs::read(&input).unwrap();
    let output = d.join("clip.mp4");
    for (overwrite, expected) in [(false, "clip.partial-2.mp4"), (true, "clip.partial-3.mp4")] {
        let mut extra = SLOW.to_vec();
        if overwrite {
            extra.push("--overwrite");
        }
        let mut run = Running::start(&input, &output, &extra);
        run.wait_frames(2);
        run.signal("-INT");
        let (code, out, err) = run.finish();
        assert_eq!(code, Some(130), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("report");
        assert_eq!(v["status"], "partial");
        // Every line of the jsonl stream is an event, Ctrl+C's message included, and the
        // last says the run finished partial.
        let events = parse_jsonl(&err);
        assert!(events.iter().any(|e| e["event"] == "interrupt"), "{err}");
        let last = events.last().unwrap();
        assert_eq!(
            (&last["event"], &last["status"]),
            (&"finished".into(), &"partial".into())
        );
        let kept = d.join(expected);
        assert_eq!(
            v["output"],
            kept.to_str().unwrap(),
            "the report names the real path"
        );
        assert_eq!(
            std::fs::read(&input).unwrap(),
            input_bytes,
            "the input is untouched (overwrite {overwrite})"
        );
        // The report counts the frames the file holds, in and out (frames decoded but in
        // flight when stopped were never upscaled).
        let held = frame_times(&kept).len() as u64;
        assert_eq!(held, v["frames_out"].as_u64().unwrap());
        assert_eq!(held, v["frames_in"].as_u64().unwrap());
        assert_eq!(held, v["input_damage"]["frames_decoded"].as_u64().unwrap());
        assert!(!output.exists());
        assert_eq!(temp_files_left(d), Vec::<String>::new());
    }
}

#[test]
fn ctrl_c_does_not_overwrite_an_existing_partial_without_overwrite() {
    let dir = scratch();
    let d = dir.path();
    let input = slow_clip(d, "in.mp4");
    let earlier = d.join("out.partial.mp4");
    std::fs::write(&earlier, b"an earlier partial the user kept").unwrap();
    let mut run = Running::start(&input, &d.join("out.mp4"), SLOW);
    run.wait_frames(2);
    run.signal("-INT");
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["output"], d.join("out.partial-2.mp4").to_str().unwrap());
    assert_eq!(
        std::fs::read(&earlier).unwrap(),
        b"an earlier partial the user kept"
    );
}

#[test]
fn two_runs_on_one_output_cannot_both_succeed() {
    let dir = scratch();
    let d = dir.path();
    // Segments of 10 frames, one at a time, so the interrupted job has finished some.
    let input = d.join("in.mp4");
    reencode_gop10(&slow_clip(d, "src.mp4"), &input);
    std::fs::remove_file(d.join("src.mp4")).unwrap();
    let output = d.join("out.mp4");
    let mut segmented = SLOW.to_vec();
    segmented.extend(["--segment-frames", "10", "--jobs", "1"]);
    let mut first = Running::start(&input, &output, &segmented);
    first.wait_done(15);
    let temp = d.join(".out.mp4.rave.tmp");
    assert!(temp.exists(), "the first run writes through {temp:?}");
    for extra in [&[][..], &["--overwrite"][..]] {
        let o = upscale(&input, &output, &fixture("nearest_x2.onnx"), extra);
        assert_exit(&o, 4);
        let err = stderr(&o);
        assert!(err.contains("being written by another rave run"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(temp.exists(), "the live run's temporary file is left alone");
    }
    first.signal("-INT");
    let (code, _, err) = first.finish();
    assert_eq!(code, Some(130), "{err}");

    // Free again, but the interrupted job's work folder is kept for its resume: a run with
    // other settings is refused until it asks to start over; then it succeeds, and the one
    // after it finds the result.
    let m = fixture("nearest_x2.onnx");
    let o = upscale(&input, &output, &m, &["--max-frames", "2"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("cannot be resumed") && stderr(&o).contains("--restart"),
        "{}",
        stderr(&o)
    );
    assert_exit(
        &upscale(&input, &output, &m, &["--max-frames", "2", "--restart"]),
        0,
    );
    let o = upscale(&input, &output, &m, &["--max-frames", "2"]);
    assert_exit(&o, 4);
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(temp_files_left(d), Vec::<String>::new());
}

#[test]
fn the_temp_file_of_a_killed_run_is_removed_by_the_next_run() {
    let dir = scratch();
    let d = dir.path();
    let input = slow_clip(d, "in.mp4");
    let mut run = Running::start(&input, &d.join("killed.mp4"), SLOW);
    run.wait_frames(2);
    run.signal("-KILL");
    let (code, _, _) = run.finish();
    assert_eq!(code, None, "killed by a signal");
    assert_eq!(temp_files_left(d), vec![".killed.mp4.rave.tmp".to_string()]);

    // Another output in the same folder.
    let o = upscale(
        &input,
        &d.join("next.mp4"),
        &fixture("nearest_x2.onnx"),
        &["--max-frames", "2"],
    );
    assert_exit(&o, 0);
    assert_eq!(temp_files_left(d), Vec::<String>::new());
    // The killed job's work folder stays for its resume.
    assert_eq!(
        sorted_names(d),
        [".killed.mp4.rave-work", "in.mp4", "next.mp4"]
    );
}

#[test]
fn a_second_ctrl_c_removes_the_temp_file_before_leaving() {
    let dir = scratch();
    let d = dir.path();
    // Large frames through the fast model into a slow encoder: finalizing after the first
    // Ctrl+C (flushing the encoder's look-ahead) takes long enough for the second.
    let input = make_photo_clip(d, "in.mp4", 640, 360, 150);
    let m = fixture("nearest_x2.onnx");
    let mut run = Running::start(
        &input,
        &d.join("out.mp4"),
        &["-m", m.to_str().unwrap(), "--preset", "veryslow", "--json"],
    );
    run.wait_frames(5);
    run.signal("-INT");
    run.wait_for("stopping");
    run.second_stop("-INT");
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    // Its last words are the run's error, in the forms asked for: the jsonl stream's last
    // event and the --json document.
    let last: serde_json::Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["event"], &last["error"]["kind"]),
        (&"error".into(), &"aborted".into())
    );
    let doc: serde_json::Value = serde_json::from_str(&out).expect("the --json error");
    assert_eq!(doc["error"]["exit_code"], 130);
    assert_eq!(temp_files_left(d), Vec::<String>::new());
    assert_eq!(
        sorted_names(d),
        [".out.mp4.rave-work", "in.mp4"],
        "nothing is left but the input and the job's work folder (for the resume)"
    );
}

/// Two stop signals at once (`timeout` signals the process, then its process group): one
/// stop, the partial kept. (Read as a second Ctrl+C: "aborted by a second stop signal",
/// the partial removed.)
#[test]
fn two_stop_signals_at_once_are_one_stop() {
    let dir = scratch();
    let d = dir.path();
    let input = slow_clip(d, "in.mp4");
    let mut run = Running::start(&input, &d.join("out.mp4"), SLOW);
    run.wait_frames(2);
    let pid = run.pid().to_string();
    let sent = std::process::Command::new("sh")
        .args(["-c", "kill -TERM \"$1\"; kill -INT \"$1\"", "sh", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("second stop signal"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("the --json report");
    assert_eq!(v["status"], "partial", "{v}");
    let kept = d.join("out.partial.mp4");
    assert_eq!(
        frame_times(&kept).len() as u64,
        v["frames_out"].as_u64().unwrap()
    );
}

#[test]
fn ctrl_c_before_the_first_frame_keeps_nothing() {
    let dir = scratch();
    let d = dir.path();
    // The installed model on one thread needs about a second for the first frame.
    let input = make_photo_clip(d, "in.mp4", 320, 180, 20);
    let mut run = Running::start(&input, &d.join("out.mp4"), SLOW);
    run.wait_for("\"started\"");
    run.signal("-INT");
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON error");
    assert_eq!(v["error"]["kind"], "cancelled_before_output");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was written"),
        "{v}"
    );
    assert_eq!(sorted_names(d), ["in.mp4"], "no partial, no temp file");

    // Without --json, the last event says so (these runs use --progress jsonl, where the
    // error is an event, as every line).
    let mut run = Running::start(&input, &d.join("out.mp4"), &["--threads", "1"]);
    run.wait_for("\"started\"");
    run.signal("-INT");
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let last: serde_json::Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "error", "{err}");
    assert_eq!(
        last["error"]["message"],
        "interrupted before the first frame was written; nothing was written"
    );
    assert_eq!(sorted_names(d), ["in.mp4"]);
}

/// A double Ctrl+C while the run is still starting (loading the model, reserving and
/// opening the output) must leave no file and print nothing but its own line: the other
/// threads run on while the process exits, so it must neither let them create files after
/// the removal nor tear down the libraries they use.
#[test]
fn a_double_ctrl_c_during_start_up_leaves_nothing_and_says_only_that() {
    let dir = scratch();
    let d = dir.path();
    let input = make_clip(d, "in.mp4", "160x96", 100);
    let m = fixture("nearest_x2.onnx");
    for step in 0..30u64 {
        let mut command = rave();
        command
            .args(["upscale", "-i", input.to_str().unwrap()])
            .args(["-o", d.join("out.mkv").to_str().unwrap()])
            .args(["-m", m.to_str().unwrap(), "--codec", "av1"])
            .args(["--progress", "off", "--overwrite"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // A test run started in the background of a script inherits SIGINT ignored (POSIX
        // shells ignore it for `&` jobs); a Ctrl+C before RAVE's handler is installed would
        // then be lost and the run complete. The child starts as from a terminal.
        // SAFETY: signal(2) is async-signal-safe and touches no memory of the parent's.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30 + 3 * step));
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) on the child's own process id; it reads no memory.
        unsafe { libc::kill(pid, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: as above (the child is not yet reaped, so the id is still its own).
        unsafe { libc::kill(pid, libc::SIGINT) };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        // Before the handler is installed, SIGINT's default action ends the process.
        assert!(
            status.code() == Some(130) || status.code().is_none(),
            "step {step}: {status:?} {err}"
        );
        assert!(!err.contains("rave: error"), "step {step}: {err}");
        assert_eq!(
            temp_files_left(d),
            Vec::<String>::new(),
            "step {step}: {err}"
        );
        for name in sorted_names(d) {
            if name.starts_with("out.partial") {
                std::fs::remove_file(d.join(name)).unwrap();
            }
        }
    }
}

/// An output that appears while the run works is not replaced: the run fails (exit 4)
/// naming where the finished file went (`NAME-2.EXT`), and with the result there, no work
/// folder is left to resume.
#[test]
fn an_output_that_appears_during_the_run_is_kept_and_the_result_put_beside_it() {
    let dir = scratch();
    let d = dir.path();
    let input = make_photo_clip(d, "in.mp4", 160, 96, 40);
    let output = d.join("out.mp4");
    let mut run = Running::start(&input, &output, SLOW);
    run.wait_frames(2);
    std::fs::write(&output, b"written by someone else").unwrap();
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(4), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("the --json error");
    let kept = d.join("out-2.mp4");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("the finished file was kept as {}", kept.display())),
        "{v}"
    );
    assert_eq!(std::fs::read(&output).unwrap(), b"written by someone else");
    assert_eq!(frame_times(&kept).len(), 40);
    assert!(
        !d.join(".out.mp4.rave-work").exists(),
        "no work folder left"
    );
    assert_eq!(temp_files_left(d), Vec::<String>::new());
}

/// `rave benchmark` writes its passes to scratch in the temporary folder, which is never
/// resumed: Ctrl+C in the full pass ends it (exit 130) measured on the frames done, without
/// advice to resume and without its work folder; a second Ctrl+C leaves nothing either.
#[test]
fn a_benchmark_stopped_by_ctrl_c_leaves_no_scratch() {
    let dir = scratch();
    let d = dir.path();
    let input = slow_clip(d, "in.mp4");
    for presses in [1, 2] {
        let tmp = d.join(format!("tmp{presses}"));
        std::fs::create_dir(&tmp).unwrap();
        let mut run = Running::command(
            rave()
                .env("TMPDIR", &tmp)
                .args(["benchmark", "-i", input.to_str().unwrap()])
                .args(["--frames", "30", "--threads", "1", "--progress", "jsonl"]),
        );
        // The second pass (the full pipeline) started, and has frames out.
        run.wait_for("\"started\"");
        run.wait_for("\"started\"");
        run.wait_frames(2);
        assert!(
            !sorted_names(&tmp).is_empty(),
            "the full pass writes to scratch in TMPDIR"
        );
        run.signal("-INT");
        if presses == 2 {
            run.wait_for("\"interrupt\"");
            run.second_stop("-INT");
        }
        let (code, out, err) = run.finish();
        assert_eq!(code, Some(130), "{err}");
        assert!(!err.contains("resume"), "{err}");
        assert!(!out.contains("resume"), "{out}");
        if presses == 1 {
            assert!(out.contains("full pipeline"), "{out}");
        }
        assert_eq!(sorted_names(&tmp), Vec::<String>::new(), "{err}");
    }
}

/// A run writes its output and nothing else: not in the home folder, not in the temporary
/// folder. ONNX Runtime (1.29 and later) would otherwise keep a device id and an event store
/// for Microsoft's telemetry under `~/.cache/Microsoft` and a `.ses` file in TMPDIR.
#[test]
fn a_run_leaves_nothing_in_home_or_the_temporary_folder() {
    let dir = scratch();
    let d = dir.path();
    let input = make_clip(d, "in.mp4", "32x32", 3);
    let (home, tmp) = (d.join("home"), d.join("tmp"));
    std::fs::create_dir(&home).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let m = fixture("nearest_x2.onnx");
    let o = rave()
        .env_remove("ORT_DISABLE_TELEMETRY")
        .env("RAVE_HOME", rave_home())
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .args(["upscale", "-i", input.to_str().unwrap()])
        .args(["-o", d.join("out.mkv").to_str().unwrap()])
        .args(["-m", m.to_str().unwrap(), "--device", "cpu"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    assert_eq!(sorted_names(&home), Vec::<String>::new());
    assert_eq!(sorted_names(&tmp), Vec::<String>::new());
}

/// Ctrl+C before any segment is finished keeps the partial output but no work folder:
/// there is nothing to resume, and a later run with other settings simply starts.
#[test]
fn ctrl_c_before_a_segment_is_finished_keeps_no_work_folder() {
    let dir = scratch();
    let d = dir.path();
    let input = slow_clip(d, "in.mp4");
    let output = d.join("out.mp4");
    let mut run = Running::start(&input, &output, SLOW);
    run.wait_frames(2);
    run.signal("-INT");
    let (code, out, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("keeps the 0"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"], "partial", "{v}");
    assert_eq!(sorted_names(d), ["in.mp4", "out.partial.mp4"]);
    let m = fixture("nearest_x2.onnx");
    assert_exit(&upscale(&input, &output, &m, &["--max-frames", "2"]), 0);
}
