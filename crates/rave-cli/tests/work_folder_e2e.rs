//! End-to-end tests of a job's work folder as a user meets it: folders RAVE did not make
//! or that hold files under its names, the text report's segments line, an output that
//! cannot be written (after every segment, or after Ctrl+C), the input or segment files
//! changed during the run, an input named as a work file inside the folder, a working
//! folder whose path is not UTF-8, --work naming the output itself. The distributed
//! commands' own tests are in distributed_commands_e2e.rs; resuming under other paths in
//! work_folder_paths_e2e.rs.

mod common;

use std::path::Path;

use common::*;

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
    assert!(stderr(&o).contains("under the name of one of RAVE's work files"));
    let o = upscale(&clip, &d.join("out.mp4"), &m, &["--work", w]);
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
    // --work naming the output itself, however spelled: refused before any work, for
    // rave upscale and rave plan alike (the job had run, then found a folder at its name).
    let out = other.join("out.mp4");
    let spelled = format!("{}/../other/out.mp4/", other.display());
    for (command, work) in [
        ("upscale", out.to_str().unwrap()),
        ("plan", spelled.as_str()),
    ] {
        let o = run(&[
            command,
            "-i",
            clip.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-m",
            m.to_str().unwrap(),
            "--work",
            work,
        ]);
        assert_exit(&o, 2);
        assert!(
            stderr(&o).contains("--work names the output") && stderr(&o).contains("itself"),
            "{command}: {}",
            stderr(&o)
        );
        assert!(sorted_names(&other).is_empty(), "{command}");
    }
}

/// An input that lies in the work folder under a name RAVE gives its own files: RAVE's
/// default folder beside the output (where segment files without a manifest are what a
/// killed run left, and are removed), and a planned job's folder given --restart (which
/// removes its segments). Refused before anything is removed; the input is untouched.
#[test]
fn an_input_named_as_a_work_file_in_the_work_folder_is_refused_and_kept() {
    let dir = scratch();
    let d = dir.path();
    let clip = photo_clip_gop10(d, 20);
    let m = fixture("nearest_x2.onnx");
    let work = d.join(".out.mp4.rave-work");
    std::fs::create_dir(&work).unwrap();
    let input = work.join("seg-00000.mp4");
    std::fs::copy(&clip, &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let refused = |o: &std::process::Output| {
        assert_exit(o, 2);
        let err = stderr(o);
        assert!(
            err.contains("the input") && err.contains("under the name of one of RAVE's work files"),
            "{err}"
        );
        assert_eq!(std::fs::read(&input).unwrap(), before, "the input is kept");
    };
    refused(&upscale(&input, &d.join("out.mp4"), &m, &[]));
    // Through a symbolic link to it, under a name of the user's.
    let link = d.join("film.mp4");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    refused(&upscale(&link, &d.join("out.mp4"), &m, &[]));
    // A link in the folder under a work file's name, to a file elsewhere: removing the link
    // would take the input from its path.
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    let other_work = other.join(".out.mp4.rave-work");
    std::fs::create_dir(&other_work).unwrap();
    let named = other_work.join("seg-00002.mp4");
    std::os::unix::fs::symlink(&clip, &named).unwrap();
    let o = upscale(&named, &other.join("out.mp4"), &m, &[]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("under the name of one of RAVE's work files"),
        "{}",
        stderr(&o)
    );
    assert!(named.symlink_metadata().is_ok(), "the link is kept");

    // A job planned in a --work folder, then restarted with the input moved into it.
    let planned = d.join("planned");
    let w = planned.to_str().unwrap();
    let opts = ["--work", w, "--segment-frames", "10"];
    let o = rave()
        .args([
            "plan",
            "-i",
            clip.to_str().unwrap(),
            "-o",
            d.join("p.mp4").to_str().unwrap(),
            "-m",
            m.to_str().unwrap(),
        ])
        .args(opts)
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let moved = planned.join("seg-00001.mp4");
    std::fs::copy(&clip, &moved).unwrap();
    let o = upscale(
        &moved,
        &d.join("p.mp4"),
        &m,
        &[&opts[..], &["--restart"]].concat(),
    );
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("under the name of one of RAVE's work files"));
    assert_eq!(std::fs::read(&moved).unwrap(), before);
    assert!(planned.join("manifest.json").is_file(), "the job is kept");
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

/// Run from a folder whose path is not valid UTF-8, the job's paths cannot go into its
/// manifest (JSON is text): refused as a usage error before the work folder is made, where
/// it failed as an internal error and left lock files behind.
#[test]
fn a_working_folder_whose_path_is_not_utf8_is_refused_before_any_file_is_made() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir(&odd).unwrap();
    let clip = make_clip(dir.path(), "a.mp4", "32x32", 4);
    std::fs::copy(&clip, odd.join("a.mp4")).unwrap();
    let work = dir.path().join("work");
    let o = rave()
        .current_dir(&odd)
        .args(["upscale", "-i", "a.mp4", "-o", "o.mp4", "-m"])
        .arg(fixture("nearest_x2.onnx"))
        .arg("--work")
        .arg(&work)
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("is not valid UTF-8"), "{}", stderr(&o));
    assert_eq!(sorted_names(&odd), ["a.mp4"]);
    assert!(!work.exists(), "no work folder");
    // A job planned with UTF-8 paths resumes from there: its manifest keeps its own paths.
    let out = dir.path().join("o.mp4");
    let again = |from: &std::path::Path| {
        rave()
            .current_dir(from)
            .args(["upscale", "-i"])
            .arg(&clip)
            .arg("-o")
            .arg(&out)
            .arg("-m")
            .arg(fixture("nearest_x2.onnx"))
            .arg("--work")
            .arg(&work)
            .args(["--keep-work", "--overwrite"])
            .output()
            .unwrap()
    };
    assert_exit(&again(dir.path()), 0);
    let o = again(&odd);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("0 upscaled by this run"),
        "{}",
        stdout(&o)
    );
}
