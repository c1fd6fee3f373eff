//! End-to-end tests of a job's work folder as a user meets it: resuming under another
//! spelling of the same paths, folders RAVE did not make, the text report's segments line,
//! and `rave assemble` over an existing output.

mod common;

use std::path::Path;

use common::*;

#[test]
fn a_kept_job_is_the_same_job_under_another_spelling_and_foreign_folders_are_left_alone() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    let work = d.join(".out.mp4.rave-work");
    let opts = ["--segment-frames", "10", "--keep-work"];
    let v = upscale_ok(&input, &output, &model, &opts);
    assert_eq!(segment_counts(&v), (4, 4, 0, 1));
    assert!(work.join("manifest.json").is_file());

    // The same input through `..` and a symbolic link: the same job, every segment reused.
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(&input, d.join("link.mp4")).unwrap();
    for spelled in [
        d.join("sub/../").join(input.file_name().unwrap()),
        d.join("link.mp4"),
    ] {
        let again = [&opts[..], &["--overwrite"]].concat();
        let v = upscale_ok(&spelled, &output, &model, &again);
        assert_eq!(segment_counts(&v), (4, 0, 4, 1), "{}", spelled.display());
    }

    // A folder made by `rave upscale` is finished by `rave upscale`, and `assemble` says so.
    let o = rave()
        .args(["assemble", "--work", work.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("started by `rave upscale`"),
        "{}",
        stderr(&o)
    );

    // Someone else's folder with a manifest.json: refused, --restart too, and untouched.
    let foreign = d.join("webapp");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("manifest.json"), br#"{"name": "webapp"}"#).unwrap();
    for extra in [&[][..], &["--restart"][..]] {
        let args = [
            &["--work", foreign.to_str().unwrap(), "--overwrite"][..],
            extra,
        ]
        .concat();
        let o = upscale(&input, &output, &model, &[CPU, &args].concat());
        assert_exit(&o, 2);
        let message = report(&o)["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("not written by RAVE"), "{message}");
    }
    assert_eq!(
        std::fs::read(foreign.join("manifest.json")).unwrap(),
        br#"{"name": "webapp"}"#
    );
}

#[test]
fn the_text_report_says_how_many_segments_were_upscaled_and_reused() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    let base = [
        "--device",
        "cpu",
        "--segment-frames",
        "10",
        "--progress",
        "off",
    ];
    let run = |extra: &[&str]| {
        let opts = [&base[..], extra].concat();
        rave()
            .args(upscale_args(&input, &output, &model, &opts))
            .output()
            .unwrap()
    };
    let o = run(&["--keep-work"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("segments: 4 (4 upscaled by this run, 0 reused from an earlier one)"),
        "{text}"
    );
    assert!(text.contains("work folder kept: "), "{text}");
    assert!(!text.contains("reused from an earlier run"), "{text}");
    let o = run(&["--overwrite", "--keep-work"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("segments: 4 (0 upscaled by this run, 4 reused from an earlier one)")
            && text.contains("fps (every frame reused from an earlier run)"),
        "{text}"
    );
    // Two segments redone: the speed is of their 20 frames.
    let work = d.join(".out.mp4.rave-work");
    std::fs::remove_file(work.join("seg-00001.mp4")).unwrap();
    std::fs::remove_file(work.join("seg-00003.mp4")).unwrap();
    let o = run(&["--overwrite"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("40 frames in, 40 out")
            && text
                .contains("fps over the 20 frames upscaled by this run (the others were reused)"),
        "{text}"
    );
}

#[test]
fn assemble_replaces_an_existing_output_only_with_overwrite() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 20);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    let work = d.join("job");
    let w = work.to_str().unwrap();
    let o = rave()
        .args([
            "plan",
            "-i",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ])
        .args([
            "-m",
            model.to_str().unwrap(),
            "--device",
            "cpu",
            "--segment-frames",
            "10",
        ])
        .args(["--work", w])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    for i in ["0", "1"] {
        let o = rave()
            .args(["segment", "--work", w, "--index", i])
            .output()
            .unwrap();
        assert_exit(&o, 0);
    }
    let assemble = |extra: &[&str]| {
        rave()
            .args(["assemble", "--work", w, "--keep-work"])
            .args(extra)
            .output()
            .unwrap()
    };
    assert_exit(&assemble(&[]), 0);
    let o = assemble(&[]);
    assert_exit(&o, 4);
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_exit(&assemble(&["--overwrite"]), 0);
    assert_eq!(frame_times(&output), frame_times(&input));
}

#[test]
fn status_and_segment_do_not_trust_a_done_segment_whose_file_is_gone_or_a_failed_one() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 30);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    let work = d.join("job");
    let w = work.to_str().unwrap();
    let planned = rave()
        .args(["plan", "-i", input.to_str().unwrap(), "-o"])
        .arg(&output)
        .args(["-m", model.to_str().unwrap(), "--device", "cpu"])
        .args(["--segment-frames", "10", "--work", w])
        .output()
        .unwrap();
    assert_exit(&planned, 0);
    let segment = |i: &str| {
        rave()
            .args(["segment", "--work", w, "--index", i, "--json"])
            .output()
            .unwrap()
    };
    let status = || {
        let o = rave()
            .args(["status", "--work", w, "--json"])
            .output()
            .unwrap();
        assert_exit(&o, 0);
        report(&o)
    };
    for i in ["0", "1", "2"] {
        assert_exit(&segment(i), 0);
    }
    assert_eq!(status()["done"], 3);

    // A done segment's file removed: status does not count it, segment redoes it.
    std::fs::remove_file(work.join("seg-00001.mp4")).unwrap();
    let s = status();
    assert_eq!(
        (s["done"].as_u64(), s["lost"][0].as_u64()),
        (Some(2), Some(1))
    );
    let text = rave().args(["status", "--work", w]).output().unwrap();
    assert!(
        stdout(&text).contains("done, but its file is missing or changed"),
        "{}",
        stdout(&text)
    );
    let o = segment("1");
    assert_exit(&o, 0);
    assert_eq!(report(&o)["already_done"], false, "redone, not trusted");
    assert!(work.join("seg-00001.mp4").exists());
    assert_eq!(status()["done"], 3);

    // A segment whose worker fails is pending again, not shown running for a dead worker.
    std::fs::remove_file(work.join("seg-00002.mp4")).unwrap();
    let o = rave()
        .args(["segment", "--work", w, "--index", "2", "--json"])
        .env("RAVE_INJECT_FAILURE", "3")
        .output()
        .unwrap();
    assert_exit(&o, 6);
    let s = status();
    assert_eq!(s["segments"][2]["state"], "pending", "{s}");
    assert_eq!(s["done"], 2);
    assert_exit(&segment("2"), 0);

    // A done segment's bytes changed in place (same size): assemble says which and why.
    let seg0 = work.join("seg-00000.mp4");
    let mut bytes = std::fs::read(&seg0).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle..middle + 8].copy_from_slice(b"XXXXXXXX");
    std::fs::write(&seg0, bytes).unwrap();
    let o = rave().args(["assemble", "--work", w]).output().unwrap();
    assert_exit(&o, 7);
    assert!(
        stderr(&o).contains("1 of 3 segments are not done (segment 0); seg-00000.mp4 was done but no longer matches its checksum (damaged on disk, or changed by another program) and must be redone"),
        "{}",
        stderr(&o)
    );
    assert_exit(&segment("0"), 0);
    let o = rave().args(["assemble", "--work", w]).output().unwrap();
    assert_exit(&o, 0);
    assert_eq!(frame_times(&output), frame_times(&input));
}

/// `rave plan` refuses before planning what `rave upscale` refuses before any work, rather
/// than leaving it to the workers: a model ONNX Runtime cannot read (exit 5), an output that
/// exists without --overwrite (exit 4) or is the input; no work folder is made.
#[test]
fn plan_refuses_a_bad_model_or_output_before_planning() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 20);
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let plan = |model: &std::path::Path, output: &std::path::Path, extra: &[&str]| {
        rave()
            .args(["plan", "-i", &s(&input), "-o", &s(output), "-m", &s(model)])
            .args(["--device", "cpu", "--work", &s(&d.join("job"))])
            .args(extra)
            .output()
            .unwrap()
    };
    let junk = d.join("junk.onnx");
    std::fs::write(&junk, b"not a model").unwrap();
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    assert_exit(&plan(&junk, &output, &[]), 5);
    std::fs::write(&output, b"an earlier result").unwrap();
    let o = plan(&model, &output, &[]);
    assert_exit(&o, 4);
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_exit(&plan(&model, &input, &["--overwrite"]), 4);
    let link = d.join("link.mp4");
    std::fs::hard_link(&input, &link).unwrap();
    assert_exit(&plan(&model, &link, &["--overwrite"]), 4);
    let o = plan(&model, &d.join("no/such/out.mp4"), &[]);
    assert_exit(&o, 4);
    assert!(
        stderr(&o).contains("its folder does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(
        !d.join("job").exists() && !d.join("no").exists(),
        "nothing planned"
    );
    assert_exit(&plan(&model, &output, &["--overwrite"]), 0);
}

/// The output cannot be written when every segment is done (a full disk; here a file-size
/// limit): exit 4, the work folder keeps the segments and says so, and the same command,
/// once there is room, puts them together without upscaling any again.
#[test]
fn an_output_that_cannot_be_written_keeps_the_finished_segments() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    // A limit between the largest segment and the whole output, from a run that keeps them.
    let sized = d.join("sized.mp4");
    upscale_ok(
        &input,
        &sized,
        &model,
        &["--segment-frames", "10", "--keep-work"],
    );
    let largest = std::fs::read_dir(d.join(".sized.mp4.rave-work"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .max()
        .unwrap();
    let whole = std::fs::metadata(&sized).unwrap().len();
    assert!(largest + 2048 < whole, "{largest} {whole}");
    let kib = (largest + whole) / 2 / 1024;
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -f "$4"; exec "$0" upscale -i "$1" -o "$2" -m "$3" --device cpu --segment-frames 10"#)
        .args([env!("CARGO_BIN_EXE_rave"), input.to_str().unwrap(), output.to_str().unwrap()])
        .args([model.to_str().unwrap(), &kib.to_string()])
        .output()
        .unwrap();
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains("keeps the 4 finished segment(s); once the output can be written, run the same command again to put them together without upscaling again"),
        "{err}"
    );
    assert!(!output.exists());
    let v = upscale_ok(&input, &output, &model, &["--segment-frames", "10"]);
    assert_eq!(segment_counts(&v).2, 4, "{v}");
    assert_eq!(frame_times(&output).len(), 40);
}

/// Start `rave upscale` on `input` into `output` in one-segment-at-a-time steps of 5
/// frames, and return it once the work folder holds its second finished segment.
fn started_until_second_segment(input: &Path, output: &Path) -> std::process::Child {
    let model = fixture("nearest_x2.onnx");
    let args = upscale_args(
        input,
        output,
        &model,
        &["--segment-frames", "5", "--jobs", "1"],
    );
    let child = rave()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let name = output.file_name().unwrap().to_str().unwrap();
    let second = output
        .with_file_name(format!(".{name}.rave-work"))
        .join("seg-00001.mp4");
    let began = std::time::Instant::now();
    while !second.exists() {
        assert!(began.elapsed().as_secs() < 120, "no segment finished");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child
}

/// A 12 s clip of 64x48 frames, keyframes every 5 frames, from lavfi `source`.
fn five_frame_gop_clip(path: &Path, source: &str) {
    lavfi_clip(
        path,
        &[&format!("{source}=size=64x48:rate=25:duration=12")],
        &["-c:v", "libx264", "-g", "5"],
    );
}

/// An input replaced while its segments are upscaled (another file renamed over it) is
/// said to have changed, with exit 3 and no output: its segments may hold frames of both
/// files (a sweep saw a "complete" output mixing them).
#[test]
fn an_input_replaced_during_the_run_gives_no_output_and_says_so() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("in.mkv");
    let other = d.join("other.mkv");
    five_frame_gop_clip(&input, "testsrc2");
    five_frame_gop_clip(&other, "smptebars");
    let output = d.join("out.mkv");
    let child = started_until_second_segment(&input, &output);
    let staged = d.join("staged.mkv");
    std::fs::copy(&other, &staged).unwrap();
    std::fs::rename(&staged, &input).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("in.mkv: changed during the run") && err.contains("--restart"),
        "{err}"
    );
    assert!(!output.exists(), "no output");
    assert_eq!(temp_files_left(d), Vec::<String>::new());
}

/// A finished segment's file damaged on disk during the run is found before the join (its
/// checksum): exit 4 naming it, no output; the same command again redoes that segment and
/// gives the frames of a clean run. A work folder removed during the run is said so.
#[test]
fn segment_files_damaged_or_removed_during_the_run_are_found_before_the_join() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("in.mkv");
    five_frame_gop_clip(&input, "testsrc2");
    let clean = d.join("clean.mkv");
    let model = fixture("nearest_x2.onnx");
    let steps = ["--segment-frames", "5", "--jobs", "1"];
    assert_exit(&upscale(&input, &clean, &model, &steps), 0);

    let output = d.join("out.mkv");
    let child = started_until_second_segment(&input, &output);
    let first = d.join(".out.mkv.rave-work/seg-00000.mp4");
    let mut bytes = std::fs::read(&first).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle..middle + 64].fill(0);
    std::fs::write(&first, bytes).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains("seg-00000.mp4 changed or went after being written"),
        "{err}"
    );
    assert!(!output.exists(), "no output");
    let again = upscale(&input, &output, &model, &steps);
    assert_exit(&again, 0);
    assert_eq!(decode_rgb(&output), decode_rgb(&clean));

    let removed = d.join("removed.mkv");
    let child = started_until_second_segment(&input, &removed);
    // Moved away at once (removing it file by file races with the run writing into it).
    std::fs::rename(d.join(".removed.mkv.rave-work"), d.join("elsewhere")).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(err.contains("removed during the run"), "{err}");
    assert!(!removed.exists(), "no output");
}

/// A segment worker of a job whose input changed since it was planned is told to plan it
/// again with `rave plan ... --restart` (`rave segment` has no --restart).
#[test]
fn a_worker_on_a_changed_input_is_told_to_plan_again_with_rave_plan() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 20);
    let work = d.join("job");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let model = fixture("nearest_x2.onnx");
    let o = rave()
        .args(["plan", "-i", &s(&input), "-o", &s(&d.join("out.mp4"))])
        .args(["-m", &s(&model), "--device", "cpu", "--work", &s(&work)])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let mut bytes = std::fs::read(&input).unwrap();
    bytes.extend_from_slice(b"appended");
    std::fs::write(&input, bytes).unwrap();
    let o = rave()
        .args(["segment", "--work", &s(&work), "--index", "0"])
        .output()
        .unwrap();
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("changed since it was planned")
            && err.contains("plan it again with `rave plan ... --restart`"),
        "{err}"
    );
}

#[test]
fn ctrl_c_on_a_segment_worker_says_the_segment_is_not_kept_and_it_runs_again() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = installed_model("realesr-animevideov3-x2");
    let work = d.join("job");
    let w = work.to_str().unwrap();
    let planned = rave()
        .args(["plan", "-i", input.to_str().unwrap(), "-o"])
        .arg(d.join("out.mp4"))
        .args(["-m", model.to_str().unwrap(), "--device", "cpu"])
        .args(["--segment-frames", "20", "--threads", "1", "--work", w])
        .output()
        .unwrap();
    assert_exit(&planned, 0);
    let mut child = rave()
        .args(["segment", "--work", w, "--index", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let state = || {
        let text = std::fs::read_to_string(work.join("manifest.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["segments"][0]["state"].as_str().unwrap_or("").to_string()
    };
    while state() != "running" {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the worker ended early"
        );
        assert!(
            started.elapsed().as_secs() < 60,
            "the segment never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's process id (not yet reaped); it reads no memory.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 130);
    let err = stderr(&o);
    assert!(
        err.contains("this segment is not kept") && !err.contains("finalizing"),
        "{err}"
    );
    assert_ne!(state(), "done");
    let temps = std::fs::read_dir(&work)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp.mp4")
        })
        .count();
    assert_eq!(temps, 0, "the unfinished segment's file is removed");
    let again = rave()
        .args(["segment", "--work", w, "--index", "0"])
        .output()
        .unwrap();
    assert_exit(&again, 0);
    assert_eq!(state(), "done");
}

/// A folder given to `--work` that holds files under the names RAVE gives its segments but
/// no job of RAVE's: the input itself there (it was renamed over by segment 0, then
/// removed), or a user's files (removed when the job ended). Refused before any work, the
/// files untouched.
#[test]
fn a_work_folder_holding_segment_names_but_no_job_is_refused_and_left_alone() {
    let dir = scratch();
    let d = dir.path();
    let clip = photo_clip_gop10(d, 20);
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let input = work.join("seg-00000.mp4");
    std::fs::copy(&clip, &input).unwrap();
    std::fs::write(work.join("seg-00005.mp4"), b"the user's").unwrap();
    let before = std::fs::read(&input).unwrap();
    let m = fixture("nearest_x2.onnx");
    let w = work.to_str().unwrap();
    let o = upscale(&input, &d.join("out.mp4"), &m, &["--work", w]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("holds 2 file(s) named as RAVE names its segments (seg-00000.mp4, ...)")
            && err.contains("no manifest.json"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input is untouched"
    );
    assert_eq!(sorted_names(&work), ["seg-00000.mp4", "seg-00005.mp4"]);
    // An output that would take a segment's name in the folder.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    let into = other.join("seg-00001.mp4");
    let o = upscale(&clip, &into, &m, &["--work", other.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("would be one of RAVE's work files"),
        "{}",
        stderr(&o)
    );
    assert!(sorted_names(&other).is_empty());
}

/// Ctrl+C where the partial output cannot be written (a full disk): the error names the
/// partial file, and the work folder is said to keep the segments finished before the
/// interruption for the next run to resume from, not to hold every segment.
#[test]
fn ctrl_c_with_an_unwritable_partial_says_what_the_next_run_resumes() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = installed_model("realesr-animevideov3-x2");
    let output = d.join("out.mp4");
    let opts = "--device cpu --segment-frames 10 --jobs 1 --threads 1";
    // A limit just above one segment: the partial output, two segments or more, exceeds it.
    // (Sized with the same options: the encoder's output depends on its threads.)
    let sized = d.join("sized.mp4");
    let same = ["--segment-frames", "10", "--jobs", "1", "--threads", "1"];
    upscale_ok(
        &input,
        &sized,
        &model,
        &[&same[..], &["--keep-work"]].concat(),
    );
    let largest = std::fs::read_dir(d.join(".sized.mp4.rave-work"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .max()
        .unwrap();
    let kib = largest / 1024 + 2;
    let script = format!(r#"ulimit -f "$4"; exec "$0" upscale -i "$1" -o "$2" -m "$3" {opts}"#);
    let mut child = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .args([
            env!("CARGO_BIN_EXE_rave"),
            input.to_str().unwrap(),
            output.to_str().unwrap(),
        ])
        .args([model.to_str().unwrap(), &kib.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let work = d.join(".out.mp4.rave-work");
    let began = std::time::Instant::now();
    while manifest_done(&work).is_none_or(|(n, _)| n < 2) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(began.elapsed().as_secs() < 120, "no segment finished");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's process id (bash exec'd rave; not yet reaped).
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let (done, total) = manifest_done(&work).expect("the work folder is kept");
    assert!(
        done < total,
        "every segment was done before the interruption"
    );
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "the partial output could not be written; the work folder {} keeps {done} of the 4 segment(s), finished before the interruption: run the same command again to upscale the rest",
            work.display()
        )) && err.contains("out.partial.mp4")
            && !err.contains("without upscaling again"),
        "{err}"
    );
    let v = upscale_ok(&input, &output, &model, &["--segment-frames", "10"]);
    assert_eq!(segment_counts(&v).2 as usize, done, "{v}");
    assert_eq!(frame_times(&output).len(), 40);
}

/// `rave plan -o FOLDER/` takes an output folder as `rave upscale` does (its --help says
/// so): the output takes the input's name there. A folder input is refused.
#[test]
fn plan_takes_an_output_folder_like_upscale() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 10);
    let model = fixture("nearest_x2.onnx");
    let work = d.join("job");
    let w = work.to_str().unwrap();
    let folder = format!("{}/", d.join("out").display());
    let plan = |i: &Path, o: &str| {
        rave()
            .args(["plan", "-i", i.to_str().unwrap(), "-o", o])
            .args([
                "-m",
                model.to_str().unwrap(),
                "--device",
                "cpu",
                "--work",
                w,
            ])
            .output()
            .unwrap()
    };
    assert_exit(&plan(&input, &folder), 0);
    let o = rave()
        .args(["segment", "--work", w, "--index", "0"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let o = rave().args(["assemble", "--work", w]).output().unwrap();
    assert_exit(&o, 0);
    assert_eq!(
        frame_times(&d.join("out").join("in.mp4")),
        frame_times(&input)
    );
    let o = plan(d, "x.mkv");
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("rave plan takes one input"),
        "{}",
        stderr(&o)
    );
}
