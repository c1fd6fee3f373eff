//! End-to-end tests of the distributed commands as a user meets them: `rave plan` (its
//! refusals before planning, an output folder), `rave segment` (a done segment whose file
//! is gone, a failed worker, a changed input, Ctrl+C), `rave status` and `rave assemble`
//! (an existing output, a damaged segment).

mod common;

use std::path::Path;

use common::*;

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
    // What ran it, as a run's report says.
    assert_eq!(
        report(&o)["backend"]["name"],
        "onnxruntime-cpu",
        "{}",
        stdout(&o)
    );
    assert_eq!(report(&o)["tiling"]["tiled"], false, "{}", stdout(&o));
    assert!(
        report(&segment("1"))["backend"].is_null(),
        "already done: nothing ran"
    );
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

/// `rave plan` refuses what every `rave segment` of the job would refuse as it starts, as
/// `rave upscale` does before any work: frames smaller than a fixed-size model's input
/// (exit 5), an upscaled size the encoder cannot code, a codec the container cannot hold
/// (exit 4). It planned them, and the
/// whole array of workers then failed.
#[test]
fn plan_refuses_what_every_segment_worker_would() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("17x9.mkv");
    lavfi_clip(
        &input,
        &["testsrc2=size=18x10:rate=25:duration=0.4"],
        &["-vf", "format=yuv444p,crop=17:9:0:0", "-c:v", "ffv1"],
    );
    let work = d.join("job");
    let plan_of = |input: &Path, output: &str, model: &str, extra: &[&str]| {
        rave()
            .args(["plan", "-i", input.to_str().unwrap(), "-o"])
            .arg(d.join(output))
            .arg("-m")
            .arg(fixture(model))
            .arg("--work")
            .arg(&work)
            .args(extra)
            .output()
            .unwrap()
    };
    let plan = |model: &str, extra: &[&str]| plan_of(&input, "out.mp4", model, extra);
    let o = plan("fixed_64x48_x2.onnx", &["--tile", "off"]);
    assert_exit(&o, 5);
    assert!(
        stderr(&o).contains("--tile off gives it whole frames (--tile auto pads it)"),
        "{}",
        stderr(&o)
    );
    let o = plan("nearest_x2.onnx", &["--codec", "hevc"]);
    assert_exit(&o, 4);
    assert!(
        stderr(&o).contains("17x9 upscaled x2 is 34x18, but libx265 needs"),
        "{}",
        stderr(&o)
    );
    let clip = make_clip(d, "48x32.mp4", "48x32", 5);
    let av1 = ["--codec", "av1", "--preset", "12"];
    let o = plan_of(&clip, "out.mov", "nearest_x2.onnx", &av1);
    assert_exit(&o, 4);
    assert!(
        stderr(&o).contains("AV1 video cannot be stored in QuickTime"),
        "{}",
        stderr(&o)
    );
    assert!(!work.exists(), "nothing planned");
    assert_exit(&plan("nearest_x2.onnx", &[]), 0);
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
    let wait_running = |child: &mut std::process::Child| {
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
    };
    wait_running(&mut child);
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
    // A worker killed outright cannot mark its segment pending again: `rave status` tells
    // it stopped from its process being gone (it said "running (or stopped)").
    let mut killed = rave()
        .args(["segment", "--work", w, "--index", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_running(&mut killed);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(state(), "running", "as the killed worker left it");
    let status = run(&["status", "--work", w]);
    assert!(
        stdout(&status).contains(&format!(
            ":{} has ended; the next run redoes it",
            killed.id()
        )),
        "{}",
        stdout(&status)
    );
    let json = run(&["status", "--work", w, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["stopped"], serde_json::json!([0]));
    let again = rave()
        .args(["segment", "--work", w, "--index", "0"])
        .output()
        .unwrap();
    assert_exit(&again, 0);
    assert_eq!(state(), "done");
    // A --work that does not exist is said to be missing, not "not a work folder".
    let missing = dir.path().join("no-such-folder");
    for command in ["status", "assemble"] {
        let o = run(&[command, "--work", missing.to_str().unwrap()]);
        assert_exit(&o, 2);
        assert!(
            stderr(&o).contains("does not exist"),
            "{command}: {}",
            stderr(&o)
        );
    }
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

/// `rave assemble` joins finished segments: it runs no model, so the node assembling need
/// not have the plan's model folder, model or runtime library (it failed with exit 2 on
/// a --models-dir of the planning machine that it did not have).
#[test]
fn assemble_needs_neither_the_plans_model_folder_nor_its_model() {
    let dir = scratch();
    let d = dir.path();
    let input = make_clip(d, "in.mp4", "32x32", 20);
    let models = d.join("models");
    std::fs::create_dir(&models).unwrap();
    std::fs::copy(fixture("nearest_x2.onnx"), models.join("nearest_x2.onnx")).unwrap();
    let work = d.join("job");
    let w = work.to_str().unwrap();
    let o = run(&[
        "plan",
        "-i",
        input.to_str().unwrap(),
        "-o",
        d.join("out.mp4").to_str().unwrap(),
        "-m",
        "nearest_x2",
        "--models-dir",
        models.to_str().unwrap(),
        "--ort-lib",
        rave_home().join("lib/libonnxruntime.so").to_str().unwrap(),
        "--segment-frames",
        "10",
        "--work",
        w,
    ]);
    assert_exit(&o, 0);
    let total = manifest_done(&work).unwrap().1;
    for i in 0..total {
        assert_exit(
            &run(&["segment", "--work", w, "--index", &i.to_string()]),
            0,
        );
    }
    std::fs::remove_dir_all(&models).unwrap();
    let o = run(&["assemble", "--work", w]);
    assert_exit(&o, 0);
    assert_eq!(frame_times(&d.join("out.mp4")).len(), 20);
}
