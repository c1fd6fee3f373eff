//! Several inputs run again and stopped: Ctrl+C stopping the batch and listing the inputs
//! not started, --skip-existing, a batch into its own folder run again, a name that is not
//! UTF-8.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use common::batch::*;
use common::*;

#[test]
fn ctrl_c_stops_the_batch_and_lists_the_inputs_not_started() {
    let dir = scratch();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    // The installed model on one thread takes long enough per frame to interrupt; a
    // keyframe every 10 frames makes segments of 10.
    let src = make_photo_clip(dir.path(), "src.mp4", 160, 96, 150);
    reencode_gop10(&src, &input.join("a_slow.mp4"));
    clip(&input, "b.mp4");
    let out = dir.path().join("out");
    let segments = ["--segment-frames", "10", "--jobs", "1", "--threads", "1"];
    let mut child = rave()
        .args(["upscale", "-i", s(&input), "-o", s(&out)])
        .args(segments)
        .args(["--json", "--progress", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Past the first segment.
    loop {
        let line = lines.next().expect("the run ended early").unwrap();
        let done = serde_json::from_str::<serde_json::Value>(&line).unwrap()["frames_done"]
            .as_u64()
            .unwrap_or(0);
        seen.push(line);
        if done >= 15 {
            break;
        }
    }
    assert!(seen[0].contains("\"event\":\"input\""), "{seen:?}");
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let mut text = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    // With --progress jsonl, what Ctrl+C says is an event like every other line.
    for line in seen.iter().chain(&rest) {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert!(
        rest.iter()
            .any(|l| l.contains("the inputs after it will not be started")),
        "{rest:?}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("the batch document");
    assert_eq!(v["exit_code"], 130);
    let (first, second) = (&v["results"][0], &v["results"][1]);
    assert_eq!(first["status"], "partial", "{first}");
    let partial = out.join("a_slow.partial.mp4");
    assert_eq!(first["output"], s(&partial));
    assert_eq!(
        frame_times(&partial).len() as u64,
        first["report"]["frames_out"].as_u64().unwrap()
    );
    assert_eq!(second["status"], "not_started");
    assert_eq!(second["input"], s(&input.join("b.mp4")));
    // The interrupted input keeps its work folder for the resume, which in a batch takes
    // --skip-existing (the same command would stop on the outputs already finished).
    assert_eq!(
        sorted_names(&out),
        [".a_slow.mp4.rave-work", "a_slow.partial.mp4"],
        "nothing else was started"
    );
    assert!(
        rest.iter().any(|l| l.contains(
            "finished segment(s); run the same command again with --skip-existing to resume"
        )),
        "{rest:?}"
    );
    let o = rave()
        .args(["upscale", "-i", s(&input), "-o", s(&out), "--skip-existing"])
        .args(segments)
        .arg("--json")
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["results"][0]["status"], "done", "{v}");
    let reused = v["results"][0]["report"]["segments"]["reused"].as_u64();
    assert!(reused.is_some_and(|n| n >= 1), "{v}");
    assert_eq!(frame_times(&out.join("a_slow.mp4")).len(), 150);
    // The partial the interrupted run of this job kept is said to be superseded, and left.
    let said = v["results"][0]["report"]["mux"]["warnings"].to_string();
    assert!(
        said.contains(&format!(
            "{} is the partial output of an earlier, interrupted run",
            s(&partial)
        )) && said.contains("now holds every frame"),
        "{said}"
    );
    assert!(partial.exists());
    assert!(
        !v["results"][1]["report"]["mux"]["warnings"]
            .to_string()
            .contains("partial output"),
        "{v}"
    );
    assert_eq!(v["results"][1]["status"], "done", "{v}");
}

/// Running the same batch again with --skip-existing does only what is not done: an input
/// whose output exists is left alone (its file untouched) and reported as skipped, exit 0;
/// the others run. One input likewise; `--overwrite` with it is a usage error.
#[test]
fn skip_existing_runs_only_the_inputs_without_an_output() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("in");
    std::fs::create_dir(&input).unwrap();
    let (a, b) = (clip(&input, "a.mp4"), clip(&input, "b.mp4"));
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("a.mp4"), b"an earlier result").unwrap();

    // Without it, the existing output fails its input (exit 4).
    let o = upscale_with(&["-i", s(&input), "-o", s(&out)]);
    assert_exit(&o, 4);
    std::fs::remove_file(out.join("b.mp4")).unwrap();

    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--skip-existing", "--json"]);
    assert_exit(&o, 0);
    let v = document(&o);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["results"][0]["status"], "skipped", "{v}");
    assert_eq!(v["results"][0]["input"], s(&a));
    assert_eq!(v["results"][1]["status"], "done", "{v}");
    assert_eq!(v["results"][1]["input"], s(&b));
    assert_eq!(
        std::fs::read(out.join("a.mp4")).unwrap(),
        b"an earlier result"
    );
    assert_eq!(frame_times(&out.join("b.mp4")).len(), FRAMES);

    // The summary and the jsonl stream say so too.
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--skip-existing"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("2 skipped"), "{}", stdout(&o));
    assert!(
        !stdout(&o).contains("to finish the batch"),
        "{}",
        stdout(&o)
    );
    let o = upscale_with(&[
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--skip-existing",
        "--progress",
        "jsonl",
    ]);
    assert_exit(&o, 0);
    let skipped: Vec<serde_json::Value> = jsonl_events(&o)
        .into_iter()
        .filter(|e| e["event"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 2, "{}", stderr(&o));

    // One input.
    let one = out.join("a.mp4");
    let o = upscale_with(&["-i", s(&a), "-o", s(&one), "--skip-existing"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with("skipped: "), "{}", stdout(&o));
    let o = upscale_with(&["-i", s(&a), "-o", s(&one), "--skip-existing", "--json"]);
    assert_exit(&o, 0);
    assert_eq!(document(&o)["status"], "skipped");
    assert_eq!(std::fs::read(&one).unwrap(), b"an earlier result");
    let o = upscale_with(&["-i", s(&a), "-o", s(&one), "--skip-existing", "--overwrite"]);
    assert_exit(&o, 2);
    // Not a finished output: the input itself, a folder; and a missing input stays an error.
    let o = upscale_with(&["-i", s(&a), "-o", s(&a), "--skip-existing"]);
    assert_exit(&o, 4);
    let out2 = d.join("out2");
    std::fs::create_dir_all(out2.join("a.mp4")).unwrap();
    let o = upscale_with(&["-i", s(&input), "-o", s(&out2), "--skip-existing", "--json"]);
    assert_exit(&o, 4);
    assert_eq!(document(&o)["results"][0]["status"], "failed");
    let o = upscale_with(&[
        "-i",
        s(&d.join("gone.mp4")),
        "-o",
        s(&one),
        "--skip-existing",
    ]);
    assert_exit(&o, 3);
    let o = run(&[
        "plan",
        "-i",
        s(&a),
        "-o",
        s(&d.join("p.mp4")),
        "--skip-existing",
    ]);
    assert_exit(&o, 2);
    // One work folder cannot hold several inputs' jobs: --work with a batch is refused.
    let (o3, w) = (d.join("o3"), d.join("w"));
    let o = upscale_with(&["-i", s(&input), "-o", s(&o3), "--work", s(&w)]);
    assert_refused(&o, 2, "--work names one job's work folder");
}

/// A batch into its own input folder writes `clip.mkv` beside `clip.avi`; run again (as
/// after an interrupted batch), `clip.mkv` is known by its `RAVE_SOURCE` tag as that
/// output, not a new input: the batch finishes with --skip-existing instead of refusing
/// the folder. A `.mkv` of the user's own beside an `.avi` is still refused as a clash.
#[test]
fn a_batch_into_its_own_folder_can_run_again() {
    let dir = scratch();
    let d = dir.path();
    let folder = d.join("clips");
    std::fs::create_dir(&folder).unwrap();
    let (a, b) = (clip(&folder, "a.avi"), clip(&folder, "b.avi"));
    let o = upscale_with(&["-i", s(&folder), "-o", s(&folder), "--json"]);
    assert_exit(&o, 0);
    assert!(document(&o).get("left_out").is_none());
    // The tag is a digest of the source's name, not the name.
    let tag = |name: &str| {
        ffprobe(
            &folder.join(name),
            &["-show_entries", "format_tags=RAVE_SOURCE", "-of", "csv=p=0"],
        )
        .trim()
        .to_string()
    };
    let (tag_a, tag_b) = (tag("a.mkv"), tag("b.mkv"));
    assert!(
        tag_a.starts_with("sha256:") && !tag_a.contains("a.avi"),
        "{tag_a}"
    );
    assert_ne!(tag_a, tag_b);
    // As if the batch had stopped before b.
    std::fs::remove_file(folder.join("b.mkv")).unwrap();
    let a_out = std::fs::read(folder.join("a.mkv")).unwrap();

    let o = upscale_with(&[
        "-i",
        s(&folder),
        "-o",
        s(&folder),
        "--skip-existing",
        "--json",
    ]);
    assert_exit(&o, 0);
    let v = document(&o);
    let statuses: Vec<_> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["input"].clone(), r["status"].clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (s(&a).into(), "skipped".into()),
            (s(&b).into(), "done".into())
        ],
        "{v}"
    );
    assert_eq!(v["left_out"][0]["file"], s(&folder.join("a.mkv")), "{v}");
    assert_eq!(v["left_out"][0]["output_of"], s(&a), "{v}");
    assert_eq!(v["left_out"][0]["reason"], "output_of_input", "{v}");
    assert_eq!(std::fs::read(folder.join("a.mkv")).unwrap(), a_out);
    assert_eq!(frame_times(&folder.join("b.mkv")).len(), FRAMES);
    let o = upscale_with(&["-i", s(&folder), "-o", s(&folder), "--skip-existing"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("left out     ") && stdout(&o).contains("(RAVE's output of "),
        "{}",
        stdout(&o)
    );
    let o = upscale_with(&[
        "-i",
        s(&folder),
        "-o",
        s(&folder),
        "--skip-existing",
        "--progress",
        "jsonl",
    ]);
    let event = jsonl_events(&o).pop().expect("an event");
    let last = event.to_string();
    assert_eq!(event["event"], "batch", "{last}");
    assert_eq!(
        event["left_out"].as_array().map(Vec::len),
        Some(2),
        "{last}"
    );

    // A .mkv RAVE did not write from the .avi beside it is an input, and clashes.
    let own = d.join("own");
    std::fs::create_dir(&own).unwrap();
    clip(&own, "c.avi");
    std::fs::copy(folder.join("b.mkv"), own.join("c.mkv")).unwrap();
    let o = upscale_with(&["-i", s(&own), "-o", s(&d.join("out")), "--skip-existing"]);
    assert_exit(&o, 4);
    assert!(
        stderr(&o).contains("would be written here"),
        "{}",
        stderr(&o)
    );
}

/// A path that is not valid UTF-8 cannot be handed to FFmpeg: as an argument it is refused
/// like a usage error (exit 2); in a folder that input alone fails (exit 3, named), and the
/// others are upscaled. Never a panic.
#[test]
fn a_name_that_is_not_utf8_is_refused_alone_with_one_line() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let d = dir.path();
    let bad = d.join(std::ffi::OsStr::from_bytes(b"\xff.mp4"));
    std::fs::copy(clip(d, "a.mp4"), &bad).unwrap();
    let m = fixture("nearest_x2.onnx");
    let o = rave()
        .args([
            "upscale",
            "-m",
            s(&m),
            "--device",
            "cpu",
            "-o",
            s(&d.join("o.mp4")),
            "-i",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8"), "{}", stderr(&o));

    let folder = d.join("in");
    std::fs::create_dir(&folder).unwrap();
    std::fs::rename(&bad, folder.join(std::ffi::OsStr::from_bytes(b"\xfe.mp4"))).unwrap();
    clip(&folder, "z.mp4");
    let out = d.join("out");
    let o = upscale_with(&["-i", s(&folder), "-o", s(&out), "--json"]);
    assert_exit(&o, 3);
    assert_eq!(sorted_names(&out), ["z.mp4"], "the good one is done");
    assert_eq!(frame_times(&out.join("z.mp4")).len(), FRAMES);
    // Sorted by name, byte by byte: z.mp4 before \xfe.mp4, which the report lists lossily.
    let v = document(&o);
    assert_eq!(v["results"][0]["status"], "done", "{v}");
    assert_eq!(v["results"][1]["status"], "failed", "{v}");
    // The batch's advice covers the name, not only a file gone or unreadable.
    let o = upscale_with(&["-i", s(&folder), "-o", s(&out), "--skip-existing"]);
    assert!(
        stdout(&o).contains("or a name that is not UTF-8; the reason is above); once each is a readable file in its place (renamed where its name was the reason)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(v["results"][1]["error"]["exit_code"], 3, "{v}");
    assert!(
        v["results"][1]["input"]
            .as_str()
            .unwrap()
            .ends_with("/\u{fffd}.mp4"),
        "{v}"
    );
    let why = v["results"][1]["error"]["message"].as_str().unwrap();
    assert!(why.contains("its name is not valid UTF-8"), "{why}");
    // The jsonl stream names it the same way (it once panicked serializing the name).
    let jsonl = ["--progress", "jsonl", "--skip-existing"];
    let o = upscale_with(&[&["-i", s(&folder), "-o", s(&out)][..], &jsonl].concat());
    assert_exit(&o, 3);
    let events = jsonl_events(&o);
    let failed = events
        .iter()
        .find(|e| e["event"] == "error")
        .expect("an error event");
    assert!(
        failed["input"].as_str().unwrap().ends_with("/\u{fffd}.mp4"),
        "{failed}"
    );
    assert_eq!(events.last().unwrap()["event"], "batch");
}

#[test]
fn inputs_refused_for_their_output_name_are_not_promised_to_a_rerun() {
    let dir = scratch();
    let input = dir.path().join("in");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir(&input).unwrap();
    clip(&input, "a.mp4");
    clip(&input, "folder.mp4");
    clip(&input, "link.mp4");
    clip(&input, "work.mp4");
    let long = format!("{}.mp4", "x".repeat(246));
    clip(&input, &long);
    std::fs::create_dir(out.join("folder.mp4")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone.mp4"), out.join("link.mp4")).unwrap();
    // A file where the job's work folder goes.
    std::fs::write(out.join(".work.mp4.rave-work"), b"x").unwrap();
    // With --skip-existing too: a link to nothing is no finished output.
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--skip-existing"]);
    assert_exit(&o, 4);
    let text = stdout(&o);
    assert!(text.contains("1 done, 4 failed"), "{text}");
    // Before: "to finish the batch, run the same command again with --skip-existing", which
    // failed the same three again.
    assert!(!text.contains("to finish the batch"), "{text}");
    assert!(
        text.contains("4 input(s) failed for their output's name (exit 4: a folder or a link to nothing in its place, a file where its work folder goes, the input's own name, or a name too long; the reason is above)"),
        "{text}"
    );
    let err = stderr(&o);
    for said in [
        format!(
            "{}: cannot write output: is a directory",
            s(&out.join("folder.mp4"))
        ),
        format!(
            "{}: cannot write output: a symbolic link to nothing has its name (it points to {}); remove the link, or pass --overwrite to replace it",
            s(&out.join("link.mp4")),
            s(&dir.path().join("gone.mp4"))
        ),
        "shorten it to 243 bytes at most".to_string(),
        format!(
            "{}: cannot write output: work folder: a file is where it goes; move or remove it",
            s(&out.join(".work.mp4.rave-work"))
        ),
    ] {
        assert!(err.contains(&said), "{said}\n{err}");
    }
    let o = upscale_with(&["-i", s(&input), "-o", s(&out), "--skip-existing", "--json"]);
    let v = document(&o);
    let kinds: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["error"]["kind"]
                .as_str()
                .unwrap_or(r["status"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "skipped",
            "output_name_unusable",
            "output_name_unusable",
            "output_name_unusable",
            "output_name_unusable"
        ]
    );
    assert!(
        std::fs::symlink_metadata(out.join("link.mp4")).is_ok(),
        "the link is left"
    );
}
