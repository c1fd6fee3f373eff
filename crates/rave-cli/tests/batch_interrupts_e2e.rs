//! A batch interrupted by Ctrl+C: a second Ctrl+C's `--json` document still lists the inputs
//! done (the batch document's shape), and an interrupted input's partial output leaves the
//! output name of another input alone.

mod common;

use common::running::Running;
use common::*;

#[test]
fn a_second_ctrl_c_in_a_json_batch_still_lists_the_inputs_done() {
    let dir = scratch();
    let d = dir.path();
    let inputs = d.join("in");
    std::fs::create_dir(&inputs).unwrap();
    make_clip(&inputs, "a.mp4", "32x32", 10);
    // Left out of the inputs (named as RAVE names a partial output), and listed so.
    make_clip(&inputs, "c.partial.mp4", "32x32", 3);
    // As above: finalizing the second input after the first Ctrl+C takes long enough.
    make_photo_clip(&inputs, "b.mp4", 640, 360, 150);
    let out = d.join("out");
    let m = fixture("nearest_x2.onnx");
    let mut run = Running::start(
        &inputs,
        &out,
        &["-m", m.to_str().unwrap(), "--preset", "veryslow", "--json"],
    );
    run.wait_for("b.mp4");
    run.wait_frames(5);
    run.signal("-INT");
    run.wait_for("stopping");
    run.second_stop("-INT");
    let (code, out_text, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    // Before: only the error, so a script could not tell that a.mp4 was finished.
    let doc: serde_json::Value = serde_json::from_str(&out_text).expect("the --json error");
    assert_eq!(doc["error"]["kind"], "aborted", "{doc}");
    let results = doc["results"].as_array().expect("the inputs that ended");
    // The batch document's shape, as far as the batch got.
    assert_eq!(doc["output_folder"], out.to_str().unwrap(), "{doc}");
    assert_eq!(doc["exit_code"], 130, "{doc}");
    assert_eq!(doc["left_out"][0]["reason"], "partial_name", "{doc}");
    assert_eq!(results.len(), 1, "{doc}");
    assert_eq!(results[0]["status"], "done");
    assert_eq!(results[0]["output"], out.join("a.mp4").to_str().unwrap());
    assert_eq!(results[0]["report"]["frames_out"], 10);
    assert_eq!(frame_times(&out.join("a.mp4")).len(), 10);
    assert_eq!(sorted_names(&out), [".b.mp4.rave-work", "a.mp4"]);
}

#[test]
fn an_interrupted_input_leaves_the_output_name_of_a_users_partial_named_input_alone() {
    let dir = scratch();
    let d = dir.path();
    let inputs = d.join("in");
    std::fs::create_dir(&inputs).unwrap();
    let slow = make_photo_clip(d, "slow.mp4", 640, 360, 150);
    ffmpeg(&[
        "-i",
        slow.to_str().unwrap(),
        "-c",
        "copy",
        inputs.join("a.mkv").to_str().unwrap(),
    ]);
    // The user's own file, named as RAVE names a partial output: an input, whose output is
    // out/a.partial.mkv.
    let small = make_clip(d, "small.mp4", "32x32", 10);
    let users = inputs.join("a.partial.mkv");
    ffmpeg(&[
        "-i",
        small.to_str().unwrap(),
        "-c",
        "copy",
        users.to_str().unwrap(),
    ]);
    let out = d.join("out");
    let m = fixture("nearest_x2.onnx");
    let mut run = Running::start(
        &inputs,
        &out,
        &["-m", m.to_str().unwrap(), "--preset", "veryslow", "--json"],
    );
    run.wait_frames(5);
    run.signal("-INT");
    let (code, text, err) = run.finish();
    assert_eq!(code, Some(130), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Before: a.mkv's partial took out/a.partial.mkv, and the next --skip-existing run
    // skipped the user's input as done.
    let partial = out.join("a.partial-2.mkv");
    assert_eq!(
        doc["results"][0]["output"],
        partial.to_str().unwrap(),
        "{doc}"
    );
    assert!(!out.join("a.partial.mkv").exists());
    let o = rave()
        .args([
            "upscale",
            "-i",
            inputs.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .args(["-m", m.to_str().unwrap(), "--skip-existing", "--json"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let statuses: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["done", "done"], "{v}");
    let size = ffprobe(
        &out.join("a.partial.mkv"),
        &[
            "-select_streams",
            "v",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0",
        ],
    );
    assert_eq!(size.trim(), "64,64", "the user's file upscaled");
}
