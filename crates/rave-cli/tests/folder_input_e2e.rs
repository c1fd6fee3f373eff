//! Several inputs and folder input: every input its own run into the output folder, a bad
//! one reported while the others are done, the refusals made before any work, Ctrl+C
//! stopping the batch.

mod common;

use std::path::Path;

use common::batch::*;
use common::*;

#[test]
fn an_input_that_cannot_be_read_is_named_with_what_to_do_once_it_is_back() {
    let dir = scratch();
    let input = input_folder(dir.path(), &["a.mp4"]);
    let gone = dir.path().join("moved-away.mp4");
    std::os::unix::fs::symlink(&gone, input.join("b.mp4")).unwrap();
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&input), "-o", s(&out)]);
    assert_exit(&o, 3);
    assert_eq!(sorted_names(&out), ["a.mp4"]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("is a link to {}, which does not exist", s(&gone))),
        "{err}"
    );
    let text = stdout(&o);
    assert!(
        text.contains("1 input(s) could not be read (exit 3: gone, moved, not readable by you, not a regular file, or a name that is not UTF-8; the reason is above); once each is a readable file in its place (renamed where its name was the reason), run again with --skip-existing")
            && !text.contains("--allow-corrupt"),
        "{text}"
    );
    // Put back, the batch finishes with it.
    std::fs::copy(input.join("a.mp4"), &gone).unwrap();
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--skip-existing"]);
    assert_exit(&o, 0);
    assert_eq!(sorted_names(&out), ["a.mp4", "b.mp4"]);
}

/// An input whose work folder holds its job planned with other settings (here by
/// `rave plan` with another --crf) fails for it (exit 2, "--restart starts over"); the
/// batch's advice is the command that finishes it, --skip-existing --restart, not "upscale
/// each on its own".
#[test]
fn an_input_whose_job_must_start_over_is_advised_skip_existing_restart() {
    let dir = scratch();
    let input = input_folder(dir.path(), &["a.mp4", "b.mp4"]);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let m = fixture("nearest_x2.onnx");
    let planned = run(&[
        "plan",
        "-i",
        s(&input.join("b.mp4")),
        "-o",
        s(&out.join("b.mp4")),
        "-m",
        s(&m),
        "--crf",
        "30",
    ]);
    assert_exit(&planned, 0);
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--crf", "20"]);
    assert_exit(&o, 2);
    assert_eq!(sorted_names(&out), [".b.mp4.rave-work", "a.mp4"]);
    let text = stdout(&o);
    assert!(
        text.contains("1 input(s) must be started over")
            && text.contains("run again with --skip-existing --restart")
            && !text.contains("upscale each on its own"),
        "{text}"
    );
    let o = upscale_with(&[
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--crf",
        "20",
        "--skip-existing",
        "--restart",
    ]);
    assert_exit(&o, 0);
    assert_eq!(sorted_names(&out), ["a.mp4", "b.mp4"]);
}

#[test]
fn a_folder_with_a_bad_file_upscales_the_good_ones_and_reports_the_bad_one() {
    let dir = scratch();
    let input = input_folder(dir.path(), &["a.mp4"]);
    truncated(&input, "b.mp4");
    clip(&input, "c.mkv");
    // Not taken: not a video, hidden, RAVE's own leftovers, a subfolder.
    std::fs::write(input.join("notes.txt"), b"not a video").unwrap();
    for skipped in [".hidden.mp4", "a.partial.mp4", ".a.mp4.rave.tmp"] {
        std::fs::copy(input.join("a.mp4"), input.join(skipped)).unwrap();
    }
    std::fs::create_dir(input.join("sub")).unwrap();
    clip(&input.join("sub"), "deep.mp4");

    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&input), "-o", s(&out)]);
    assert_exit(&o, 3);
    assert_eq!(
        sorted_names(&out),
        ["a.mp4", "c.mkv"],
        "the good ones, nothing else"
    );
    for name in ["a.mp4", "c.mkv"] {
        assert_eq!(frame_times(&out.join(name)).len(), FRAMES, "{name}");
        assert_eq!(video_field(&out.join(name), "width"), "64", "{name}");
    }
    let err = stderr(&o);
    let bad = input.join("b.mp4");
    assert!(
        err.lines().any(|l| l.starts_with("rave: error: ")
            && l.contains(s(&bad))
            && l.contains("the file is truncated")),
        "{err}"
    );
    let text = stdout(&o);
    assert!(text.contains("batch: 3 input(s)"), "{text}");
    assert!(text.contains("2 done, 1 failed"), "{text}");
    // Running again would fail the truncated input the same way: no advice to, but why.
    assert!(!text.contains("to finish the batch"), "{text}");
    // Cut so that FFmpeg cannot open it: --allow-corrupt cannot help either.
    assert!(
        text.contains("1 input(s) failed with exit 3 (damaged or not a video: the reason is above); running again does not change that")
            && !text.contains("--allow-corrupt"),
        "{text}"
    );
    let (a, c) = (input.join("a.mp4"), input.join("c.mkv"));
    for (status, path, then) in [
        ("done", &a, format!("-> {}", s(&out.join("a.mp4")))),
        ("failed", &bad, "the file is truncated".to_string()),
        ("done", &c, format!("-> {}", s(&out.join("c.mkv")))),
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(status)
                && l.contains(s(path))
                && l.contains(&then)),
            "{status} {path:?} {then} in\n{text}"
        );
    }

    let out = dir.path().join("json-out");
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--json"]);
    assert_exit(&o, 3);
    let v = document(&o);
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["output_folder"], s(&out));
    let results = v["results"].as_array().unwrap();
    let summary: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (r["input"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [(s(&a), "done"), (s(&bad), "failed"), (s(&c), "done")]
    );
    for r in [&results[0], &results[2]] {
        assert_eq!(r["report"]["frames_out"], FRAMES);
        assert_eq!(r["report"]["status"], "complete");
        assert!(Path::new(r["output"].as_str().unwrap()).is_file(), "{r}");
    }
    let e = &results[1]["error"];
    assert_eq!(e["exit_code"], 3);
    assert_eq!(e["family"], "input");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("the file is truncated"),
        "{e}"
    );
    assert_eq!(results[1]["output"], s(&out.join("b.mp4")));
    assert!(!out.join("b.mp4").exists());
    assert_eq!(temp_files_left(&out), Vec::<String>::new());
}

#[test]
fn the_exit_code_is_that_of_the_first_input_that_failed() {
    let dir = scratch();
    let d = dir.path();
    let (bad, good) = (truncated(d, "bad.mp4"), clip(d, "good.mp4"));
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("good.mp4"), b"an earlier result").unwrap();
    // bad.mp4 fails as an input (3), good.mp4 because its output exists (4).
    let o = upscale_with(&["-i", s(&bad), s(&good), "-o", s(&out)]);
    assert_exit(&o, 3);
    let o = upscale_with(&["-i", s(&good), s(&bad), "-o", s(&out), "--json"]);
    assert_exit(&o, 4);
    let v = document(&o);
    assert_eq!(v["results"][0]["error"]["kind"], "output_exists");
    assert_eq!(v["results"][1]["error"]["family"], "input");
    assert_eq!(
        std::fs::read(out.join("good.mp4")).unwrap(),
        b"an earlier result"
    );
}

#[test]
fn several_files_go_into_an_output_folder_under_their_own_names() {
    let dir = scratch();
    let d = dir.path();
    let (a, b, c) = (clip(d, "a.mp4"), clip(d, "b.mov"), clip(d, "c.avi"));
    // -i listing several values; the folder is created, parents too.
    let out = d.join("up/x2");
    let o = upscale_with(&["-i", s(&a), s(&b), s(&c), "-o", s(&out)]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("3 done"), "{}", stdout(&o));
    // An AVI is written as Matroska: RAVE does not write AVI.
    assert_eq!(sorted_names(&out), ["a.mp4", "b.mov", "c.mkv"]);
    for (name, format) in [("a.mp4", "mp4"), ("b.mov", "mov"), ("c.mkv", "matroska")] {
        let path = out.join(name);
        assert_eq!(frame_times(&path).len(), FRAMES, "{name}");
        let f = ffprobe(
            &path,
            &["-show_entries", "format=format_name", "-of", "csv=p=0"],
        );
        assert!(f.contains(format), "{name}: {f}");
    }

    // -i repeated, into an existing folder, with --json.
    let out = d.join("again");
    std::fs::create_dir(&out).unwrap();
    let o = upscale_with(&["-i", s(&b), "-i", s(&a), "-o", s(&out), "--json"]);
    assert_exit(&o, 0);
    let v = document(&o);
    assert_eq!(v["exit_code"], 0);
    let outputs: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["output"].as_str().unwrap())
        .collect();
    assert_eq!(
        outputs,
        [s(&out.join("b.mov")), s(&out.join("a.mp4"))],
        "in the order given"
    );

    // One file into a folder (an existing one, or a path ending in '/').
    let into = format!("{}/", s(&d.join("one")));
    let o = upscale_with(&["-i", s(&a), "-o", &into, "--json"]);
    assert_exit(&o, 0);
    assert_eq!(document(&o)["results"][0]["status"], "done");
    assert_eq!(frame_times(&d.join("one/a.mp4")).len(), FRAMES);
}

#[test]
fn inputs_that_would_share_an_output_or_be_overwritten_are_refused_before_any_work() {
    let dir = scratch();
    let d = dir.path();
    for sub in ["x", "y"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    let (x, y) = (
        clip(&d.join("x"), "clip.mp4"),
        clip(&d.join("y"), "clip.mp4"),
    );
    let out = d.join("out");
    let o = upscale_with(&["-i", s(&x), s(&y), "-o", s(&out)]);
    assert_refused(&o, 4, "would be written here");
    assert!(
        stderr(&o).contains(s(&out.join("clip.mp4"))),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing was done, not even the folder");

    // clip.avi and clip.mkv both become clip.mkv.
    let z = d.join("z");
    std::fs::create_dir(&z).unwrap();
    clip(&z, "clip.avi");
    clip(&z, "clip.mkv");
    let o = upscale_with(&["-i", s(&z), "-o", s(&out), "--json"]);
    assert_exit(&o, 4);
    let v = document(&o);
    assert_eq!(v["error"]["kind"], "output_unwritable");
    assert!(!out.exists());

    // The same file twice.
    let o = upscale_with(&["-i", s(&x), s(&x), "-o", s(&out)]);
    assert_refused(&o, 4, "is given twice");

    // The input folder as the output folder: its videos would be their own outputs.
    let before = std::fs::read(&x).unwrap();
    let o = upscale_with(&["-i", s(&d.join("x")), "-o", s(&d.join("x")), "--overwrite"]);
    assert_refused(&o, 4, "it is the input file");
    assert_eq!(std::fs::read(&x).unwrap(), before, "the input is untouched");
    assert_eq!(sorted_names(&d.join("x")), ["clip.mp4"]);
    // The same kind as a single run's output that is its input.
    let o = upscale_with(&["-i", s(&d.join("x")), "-o", s(&d.join("x")), "--json"]);
    assert_eq!(document(&o)["error"]["kind"], "output_name_unusable");
}

#[test]
fn several_inputs_with_an_output_file_are_refused() {
    let dir = scratch();
    let d = dir.path();
    let (a, b) = (clip(d, "a.mp4"), clip(d, "b.mp4"));
    let o = upscale_with(&["-i", s(&a), s(&b), "-o", s(&d.join("out.mp4"))]);
    assert_refused(&o, 2, "names a file, but 2 inputs need an output folder");
    // An existing file is a file, whatever its name.
    let before = std::fs::read(&b).unwrap();
    let o = upscale_with(&["-i", s(&a), "-i", s(&d.join("a.mp4")), "-o", s(&b)]);
    assert_refused(&o, 2, "names a file");
    assert_eq!(std::fs::read(&b).unwrap(), before);
    // A folder input needs an output folder too.
    let input = d.join("in");
    std::fs::create_dir(&input).unwrap();
    clip(&input, "c.mp4");
    let o = upscale_with(&["-i", s(&input), "-o", s(&d.join("c.mkv")), "--json"]);
    assert_exit(&o, 2);
    let v = document(&o);
    assert_eq!(v["error"]["family"], "usage");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a folder input"),
        "{v}"
    );
    assert_eq!(sorted_names(d), ["a.mp4", "b.mp4", "in"]);
}

#[test]
fn a_folder_without_videos_is_refused() {
    let dir = scratch();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&empty), "-o", s(&out)]);
    assert_refused(&o, 3, "no video files in this folder");
    assert!(stderr(&o).contains(s(&empty)), "{}", stderr(&o));
    // What the listing skips does not count.
    std::fs::write(empty.join("notes.txt"), b"x").unwrap();
    clip(&empty, ".hidden.mp4");
    clip(&empty, "x.partial.mp4");
    let o = upscale_with(&["-i", s(&empty), "-o", s(&out), "--json"]);
    assert_exit(&o, 3);
    assert_eq!(document(&o)["error"]["kind"], "input_unreadable");
    assert!(!out.exists());
}

/// An input whose output these options cannot write (AV1 in QuickTime: a batch keeps each
/// input's container) fails the same way on every run: the advice is not to run the batch
/// again but to upscale it on its own.
#[test]
fn an_output_the_options_cannot_write_is_not_offered_a_rerun() {
    let dir = scratch();
    let input = input_folder(dir.path(), &["a.mov", "b.mp4"]);
    let out = dir.path().join("out");
    let av1 = ["--codec", "av1", "--preset", "12"];
    let o = upscale_with(&[&["-i", s(&input), "-o", s(&out)][..], &av1[..]].concat());
    assert_exit(&o, 4);
    assert_eq!(sorted_names(&out), ["b.mp4"]);
    assert!(
        stderr(&o).contains("AV1 video cannot be stored in QuickTime"),
        "{}",
        stderr(&o)
    );
    let text = stdout(&o);
    assert!(!text.contains("to finish the batch"), "{text}");
    assert!(
        text.contains("1 input(s) failed for what these options cannot do with them"),
        "{text}"
    );
    // Frames a fixed-size model cannot take whole (exit 5, --tile off): the same.
    let sizes = dir.path().join("sizes");
    std::fs::create_dir(&sizes).unwrap();
    make_clip(&sizes, "small.mp4", "20x16", 2);
    make_clip(&sizes, "fits.mp4", "64x48", 2);
    let m = fixture("fixed_64x48_x2.onnx");
    let out = dir.path().join("sizes_out");
    let o = run(&[
        "upscale",
        "-i",
        s(&sizes),
        "-o",
        s(&out),
        "-m",
        s(&m),
        "--tile",
        "off",
    ]);
    assert_exit(&o, 5);
    assert_eq!(sorted_names(&out), ["fits.mp4"]);
    let text = stdout(&o);
    assert!(!text.contains("to finish the batch"), "{text}");
    assert!(
        text.contains("1 input(s) failed for what these options cannot do with them"),
        "{text}"
    );
}

/// A folder's `NAME.partial.EXT` is left out only where EXT is a container RAVE writes: a
/// user's `take.partial-2.avi` was dropped without a word.
#[test]
fn a_partial_named_video_of_a_container_rave_does_not_write_is_upscaled() {
    let dir = scratch();
    let d = dir.path().join("in");
    std::fs::create_dir(&d).unwrap();
    clip(&d, "take.partial-2.avi");
    clip(&d, "normal.mp4");
    clip(&d, "old.partial.mp4");
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&d), "-o", s(&out)]);
    assert_exit(&o, 0);
    assert_eq!(sorted_names(&out), ["normal.mp4", "take.partial-2.mkv"]);
    // The MP4 named like a partial output is not dropped without a word: listed, with how
    // to have it upscaled.
    let old = d.join("old.partial.mp4");
    assert!(
        stdout(&o).contains(&format!(
            "left out     {} (named as RAVE names a partial output; to upscale it, give it with -i {})",
            s(&old),
            s(&old)
        )),
        "{}",
        stdout(&o)
    );
}

/// A folder's `NAME.partial.mkv` is RAVE's only where it carries RAVE's tag (every Matroska
/// output does): the user's own is upscaled, RAVE's left out and listed; before, both were
/// dropped without a word.
#[test]
fn a_partial_named_matroska_is_left_out_only_when_rave_wrote_it() {
    let dir = scratch();
    let d = dir.path().join("in");
    std::fs::create_dir(&d).unwrap();
    clip(&d, "Mine.partial.mkv");
    clip(&d, "a.mp4");
    // RAVE's partial of a.mp4 (an interrupted run's output carries the same tag).
    let rave_made = dir.path().join("made");
    let o = upscale_with(&[
        "-i",
        s(&d.join("a.mp4")),
        "-o",
        s(&rave_made.with_extension("mkv")),
    ]);
    assert_exit(&o, 0);
    std::fs::rename(rave_made.with_extension("mkv"), d.join("a.partial.mkv")).unwrap();
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&d), "-o", s(&out), "--json"]);
    assert_exit(&o, 0);
    assert_eq!(sorted_names(&out), ["Mine.partial.mkv", "a.mp4"]);
    let v = document(&o);
    assert_eq!(v["left_out"][0]["file"], s(&d.join("a.partial.mkv")), "{v}");
    assert_eq!(v["left_out"][0]["reason"], "rave_partial", "{v}");
    assert!(v["left_out"][0].get("output_of").is_none(), "{v}");
    assert_eq!(v["left_out"].as_array().map(Vec::len), Some(1), "{v}");
}

/// A file name with a newline or a tab (legal on Linux) is printed with it escaped: every
/// line about an input stays one line. Before: the name split the error line and the
/// summary's in two.
#[test]
fn names_with_control_characters_stay_on_one_line() {
    let dir = scratch();
    let d = dir.path().join("in");
    std::fs::create_dir(&d).unwrap();
    clip(&d, "ok\tclip.mp4");
    truncated(&d, "bad\nname.mp4");
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&d), "-o", s(&out)]);
    assert_exit(&o, 3);
    let (text, err) = (stdout(&o), stderr(&o));
    assert!(
        text.lines()
            .any(|l| l.starts_with("  done") && l.contains("ok\\tclip.mp4 -> ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  failed") && l.contains("bad\\nname.mp4")),
        "{text}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("rave: error: ") && l.contains("bad\\nname.mp4")),
        "{err}"
    );
    for line in text.lines().chain(err.lines()) {
        assert!(
            !line.starts_with("name.mp4"),
            "a name split a line: {line:?}"
        );
        // Named once, escaped: not also in the message's one-line form.
        assert!(!line.contains("bad name.mp4"), "{line:?}");
        assert!(line.matches("bad\\nname.mp4").count() <= 1, "{line:?}");
    }
}

/// The batch's advice offers --allow-corrupt for the inputs it helps (an MP4 cut at 70%),
/// not for one it cannot (an empty file), nor again once given.
#[test]
fn the_advice_does_not_offer_allow_corrupt_where_it_cannot_help() {
    let dir = scratch();
    let input = input_folder(dir.path(), &["a.mp4"]);
    std::fs::write(input.join("empty.mp4"), b"").unwrap();
    // An MP4 whose index comes first, cut at 70%: readable up to the cut.
    let whole = dir.path().join("whole.mp4");
    lavfi_clip(
        &whole,
        &["testsrc2=size=32x32:rate=25:duration=2"],
        &["-c:v", "libx264", "-g", "10", "-movflags", "+faststart"],
    );
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(input.join("cut.mp4"), &bytes[..bytes.len() * 7 / 10]).unwrap();
    let out = dir.path().join("out");
    let o = upscale_with(&["-i", s(&input), "-o", s(&out)]);
    assert_exit(&o, 3);
    let text = stdout(&o);
    assert!(
        text.contains("2 input(s) failed with exit 3 (damaged or not a video: the reason is above); running again does not change that; to upscale what can be read of the 1 whose message says to pass --allow-corrupt, run again with --allow-corrupt --skip-existing"),
        "{text}"
    );
    // As advised: the cut one is done; the empty one is no matter for --allow-corrupt.
    let o = upscale_with(&[
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--allow-corrupt",
        "--skip-existing",
    ]);
    assert_exit(&o, 3);
    assert_eq!(sorted_names(&out), ["a.mp4", "cut.mp4"]);
    let text = stdout(&o);
    assert!(
        text.contains("1 input(s) failed with exit 3 (damaged or not a video: the reason is above); running again does not change that")
            && !text.contains("run again with --allow-corrupt"),
        "{text}"
    );
}
