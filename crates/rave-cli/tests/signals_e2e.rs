//! Signals other than a terminal's Ctrl+C: SIGHUP and SIGTERM stop a run as Ctrl+C does (a
//! partial output, exit 130), but a SIGINT or SIGHUP that was ignored when RAVE started
//! stays ignored: `nohup rave ...` goes on after its terminal closes (it was stopped by the
//! hang-up), and a script's background job is not stopped by a Ctrl+C meant for the script.

mod common;

use std::path::Path;
use std::process::Command;

use common::running::Running;
use common::*;

/// `rave upscale` of `input` to `output`, started through a shell that first runs `traps`
/// (`trap '' INT HUP` ignores them, as `nohup` or a non-interactive shell's `&` do).
fn start(traps: &str, input: &Path, output: &Path) -> Running {
    let m = fixture("nearest_x2.onnx");
    let mut command = Command::new("bash");
    command
        .args(["-c", &format!("{traps} exec \"$@\""), "bash"])
        .arg(env!("CARGO_BIN_EXE_rave"))
        .args(["upscale", "-i", input.to_str().unwrap()])
        .args(["-o", output.to_str().unwrap(), "-m", m.to_str().unwrap()])
        .args(["--preset", "veryslow", "--progress", "jsonl"])
        .env_remove("RAVE_LOG");
    Running::command(&mut command)
}

#[test]
fn an_ignored_sigint_or_sighup_stays_ignored_and_the_run_completes() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "320x240", 100);
    let output = dir.path().join("out.mkv");
    let mut run = start("trap '' INT HUP;", &input, &output);
    run.wait_frames(2);
    run.signal("-HUP");
    run.signal("-INT");
    let (code, _, err) = run.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("stopping"), "{err}");
    assert_eq!(counted_frames(&output), 100);
}

#[test]
fn sighup_stops_a_run_as_ctrl_c_does_and_sigterm_even_with_sigint_ignored() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "320x240", 100);
    for (traps, signal) in [("", "-HUP"), ("trap '' INT HUP;", "-TERM")] {
        let output = dir.path().join("out.mkv");
        let mut run = start(traps, &input, &output);
        run.wait_frames(2);
        run.signal(signal);
        let (code, _, err) = run.finish();
        assert_eq!(code, Some(130), "{signal}: {err}");
        assert!(
            err.contains(
                "stopping, finalizing the frames done so far (Ctrl+C or SIGTERM again to abort)"
            ),
            "{signal}: {err}"
        );
        let partial = dir.path().join("out.partial.mkv");
        assert!(partial.exists() && !output.exists(), "{signal}");
        std::fs::remove_file(&partial).unwrap();
    }
}
