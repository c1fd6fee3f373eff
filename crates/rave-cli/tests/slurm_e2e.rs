//! Segments on a real Slurm cluster (`bash scripts/slurm_local.sh start` runs one here):
//! a clip planned into four segments, run as an array job by deploy/slurm/submit.sh,
//! assembled and checked against a one-pass `rave upscale` of the same clip; then submitted
//! again, as a resume is, to see every task find its segment done.
//!
//! Without a cluster the test prints why and passes, unless RAVE_REQUIRE_SLURM=1 (as
//! scripts/test.sh sets it), where a missing cluster is a failure.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The clip: FRAMES frames with a keyframe every KEYINT, planned as SEGMENTS segments.
const FRAMES: u32 = 48;
const KEYINT: u32 = 12;
const SEGMENTS: u64 = 4;

/// How long the whole array and the assemble job may take on the test cluster.
const SLURM_TIMEOUT: Duration = Duration::from_secs(300);

/// Ok when a Slurm cluster takes jobs here: sinfo answers and shows a node that is up.
fn slurm_usable() -> Result<(), String> {
    let o = Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .map_err(|e| format!("sinfo: {e}"))?;
    if !o.status.success() {
        return Err(format!("sinfo: {}", stderr(&o).trim()));
    }
    let states = stdout(&o);
    // Busy nodes are up too; "idle*" (not responding) and "idle~" (powered off) are not.
    if states
        .lines()
        .any(|s| ["idle", "mix", "alloc", "comp"].contains(&s.trim()))
    {
        Ok(())
    } else {
        Err(format!("no node is up (sinfo: {:?})", states.trim()))
    }
}

/// Whether to run: true with a cluster; without one false, or a failure where
/// RAVE_REQUIRE_SLURM=1 says CI must not skip.
fn slurm_or_skip() -> bool {
    match slurm_usable() {
        Ok(()) => true,
        Err(why) if std::env::var("RAVE_REQUIRE_SLURM").as_deref() == Ok("1") => {
            panic!(
                "RAVE_REQUIRE_SLURM=1 but Slurm is not usable: {why} (bash scripts/slurm_local.sh start)"
            )
        }
        Err(why) => {
            eprintln!(
                "skipped: no Slurm cluster ({why}); `bash scripts/slurm_local.sh start` runs one"
            );
            false
        }
    }
}

/// A 64x48 H.264 + AAC clip with a keyframe every KEYINT frames and none elsewhere.
fn segmented_clip(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("in.mp4");
    let secs = format!("{}", f64::from(FRAMES) / 25.0);
    lavfi_clip(
        &path,
        &[
            &format!("testsrc2=size=64x48:rate=25:duration={secs}"),
            &format!("sine=frequency=440:sample_rate=48000:duration={secs}"),
        ],
        &[
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-x264-params",
            &format!("keyint={KEYINT}:min-keyint={KEYINT}:scenecut=0"),
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
    path
}

/// The job ids submit.sh printed ("segments job N", "assemble job M").
fn job_ids(submit_stdout: &str) -> Vec<String> {
    submit_stdout
        .lines()
        .filter_map(|l| {
            let rest = l.split(" job ").nth(1)?;
            let id = rest.split_whitespace().next()?;
            id.chars()
                .all(|c| c.is_ascii_digit())
                .then(|| id.to_string())
        })
        .collect()
}

/// Run deploy/slurm/submit.sh with `--wait` and `options` for at most SLURM_TIMEOUT and
/// fail unless it succeeds; on a timeout, cancel the jobs it submitted and fail with what
/// Slurm shows. Returns its stdout.
fn submit_and_wait(work: &Path, options: &[&str], plan_args: &[&str]) -> String {
    let mut child = Command::new("bash")
        .arg(repo().join("deploy/slurm/submit.sh"))
        .args(["--work", work.to_str().unwrap()])
        .args(["--rave", env!("CARGO_BIN_EXE_rave")])
        .args(["--max-parallel", "2", "--wait"])
        .args(options)
        .arg("--")
        .args(plan_args)
        .env_remove("RAVE_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > SLURM_TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    if status.is_none() {
        let queue = Command::new("squeue").output().map(|o| stdout(&o));
        for id in job_ids(&out) {
            let _ = Command::new("scancel").arg(&id).status();
        }
        panic!(
            "submit.sh --wait did not end in {SLURM_TIMEOUT:?} (jobs cancelled)\nstdout:\n{out}\nstderr:\n{err}\nsqueue:\n{}",
            queue.unwrap_or_default()
        );
    }
    assert!(
        status.unwrap().success(),
        "submit.sh failed\nstdout:\n{out}\nstderr:\n{err}\n{}",
        logs_text(&work.join("slurm-logs"))
    );
    out
}

/// The log of array task `index` of the array job submit.sh printed first.
fn task_log(logs: &Path, submit_stdout: &str, index: u64) -> String {
    let array = job_ids(submit_stdout)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no job id in {submit_stdout}"));
    let path = logs.join(format!("segment-{array}_{index}.out"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Names of the files in `dir`.
fn file_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Every job log in `dir`, with its name, for a failure message.
fn logs_text(dir: &Path) -> String {
    let mut names = file_names(dir);
    names.sort();
    names
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(n)).unwrap_or_default();
            format!("--- {n}\n{text}")
        })
        .collect()
}

/// `rave status --work WORK --json`, its segments' states.
fn segment_states(work: &Path) -> Vec<String> {
    let o = run(&["status", "--work", work.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let status: Value = serde_json::from_str(&stdout(&o)).expect("status --json is JSON");
    status["segments"]
        .as_array()
        .unwrap_or_else(|| panic!("no segments list in {status:#}"))
        .iter()
        .map(|s| {
            s["state"]
                .as_str()
                .unwrap_or_else(|| panic!("a segment without a state: {s}"))
                .to_string()
        })
        .collect()
}

#[test]
fn segments_run_as_a_slurm_array_and_assemble_into_the_one_pass_upscale() {
    if !slurm_or_skip() {
        return;
    }
    let dir = scratch();
    let input = segmented_clip(dir.path());
    assert_eq!(counted_frames(&input), u64::from(FRAMES));
    let output = dir.path().join("out.mp4");
    let work = dir.path().join("work");
    let logs = work.join("slurm-logs");
    let model = fixture("nearest_x2.onnx");
    // --crf 0 is lossless: the segmented result must decode to the one-pass frames exactly.
    // --overwrite lets the resubmission below assemble again.
    let plan_args = [
        "-i",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--device",
        "cpu",
        "--crf",
        "0",
        "--overwrite",
        "--segment-frames",
        &KEYINT.to_string(),
    ]
    .map(str::to_string);
    let plan_args: Vec<&str> = plan_args.iter().map(String::as_str).collect();

    let mut args = vec!["plan", "--work", work.to_str().unwrap(), "--json"];
    args.extend(&plan_args);
    let o = run(&args);
    assert_exit(&o, 0);
    let plan: Value = serde_json::from_str(&stdout(&o)).expect("plan --json is JSON");
    assert_eq!(plan["segments"], SEGMENTS, "{plan:#}");
    assert_eq!(segment_states(&work), vec!["pending"; SEGMENTS as usize]);

    // submit.sh plans again (the same plan is kept), runs the array and the assemble job,
    // which keeps the work folder here so that its state can be read.
    let t0 = Instant::now();
    let out = submit_and_wait(&work, &["--keep-work"], &plan_args);
    eprintln!("slurm: array and assemble done in {:?}", t0.elapsed());

    // Each segment ran as its own array task, and the assemble job ran.
    for i in 0..SEGMENTS {
        let log = task_log(&logs, &out, i);
        assert!(log.contains(&format!("segment {i} of {SEGMENTS}")), "{log}");
    }
    let names = file_names(&logs);
    assert!(
        names.iter().any(|n| n.starts_with("assemble-")),
        "{names:?}"
    );
    assert_eq!(segment_states(&work), vec!["done"; SEGMENTS as usize]);

    assert!(output.is_file(), "no output; stdout:\n{out}");
    assert_eq!(counted_frames(&output), u64::from(FRAMES));
    assert_eq!(video_field(&output, "width"), "128");
    assert_eq!(video_field(&output, "height"), "96");
    assert_eq!(packet_count(&output, "a:0"), packet_count(&input, "a:0"));
    let one_pass = dir.path().join("one_pass.mp4");
    let o = upscale(
        &input,
        &one_pass,
        &model,
        &["--device", "cpu", "--crf", "0"],
    );
    assert_exit(&o, 0);
    let one_pass_frames = decode_yuv420(&one_pass);
    assert!(
        decode_yuv420(&output) == one_pass_frames,
        "the assembled frames differ from the one-pass upscale"
    );

    // The same command again, as one resumes a job: every task finds its segment done, and
    // this assemble removes RAVE's files from the work folder and keeps the logs.
    let out = submit_and_wait(&work, &[], &plan_args);
    for i in 0..SEGMENTS {
        let log = task_log(&logs, &out, i);
        assert!(
            log.contains("already done"),
            "task {i} redid its segment: {log}"
        );
    }
    assert_eq!(file_names(&work), ["slurm-logs"]);
    assert!(
        decode_yuv420(&output) == one_pass_frames,
        "the output assembled again differs from the one-pass upscale"
    );
}
