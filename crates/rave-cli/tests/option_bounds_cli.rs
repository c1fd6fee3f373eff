//! Every numeric option has an accepted range: a value outside it (negative ones included) is
//! one line naming the option, the value and the range, with exit 2 and no work started; and
//! every argument error is one `rave: error:` line pointing at the command's help.

mod common;

use common::*;

/// `rave upscale` of a missing input (nothing may be read before the arguments are checked).
fn upscale_args(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "upscale",
        "-i",
        "/nonexistent/in.mp4",
        "-o",
        "/nonexistent/o.mp4",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn assert_one_usage_line(o: &std::process::Output, command: &str, needles: &[&str]) {
    assert_exit(o, 2);
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("rave: error: "), "{err}");
    assert!(
        err.trim_end().ends_with(&format!("(see {command} --help)")),
        "{err}"
    );
    for n in needles {
        assert!(err.contains(n), "{n:?} missing: {err}");
    }
}

#[test]
fn out_of_range_numbers_name_the_option_the_value_and_the_range() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--threads", "99999"],
            &["--threads", "'99999'", "0 to 1024"],
        ),
        (&["--threads", "-1"], &["--threads", "'-1'", "out of range"]),
        (
            &["--channels", "99999999999,1,1"],
            &["--channels", "99999999999", "1 to 64"],
        ),
        (&["--channels", "4,0,4"], &["--channels", "1 to 64"]),
        (
            &["--crf", "-5"],
            &["--crf", "'-5'", "out of range", "0 to 51"],
        ),
        (&["--crf", "64"], &["--crf", "'64'", "0 to 63 for av1"]),
        (
            &["--max-frames", "0"],
            &["--max-frames", "'0'", "1 to 1000000000"],
        ),
        (
            &["--max-frames", "-3"],
            &["--max-frames", "'-3'", "out of range"],
        ),
        (&["--gpu", "99999"], &["--gpu", "'99999'", "0 to 63"]),
        (&["--gpu", "-1"], &["--gpu", "'-1'", "out of range"]),
        (&["--gpus", "-1"], &["--gpus", "'-1' is not a GPU index"]),
        (
            &["--tile", "-5x5"],
            &["--tile", "-5 is out of range", "1 to 16384"],
        ),
        (
            &["--tile", "5x-5"],
            &["--tile", "-5 is out of range", "1 to 16384"],
        ),
        (
            &["--tile-overlap", "-1"],
            &["--tile-overlap", "'-1'", "0 to 4096"],
        ),
        (
            &["--vram-limit", "1MiB"],
            &["--vram-limit", "'1MiB' is below the smallest budget"],
        ),
        (&["--gpus", "-1,0"], &["--gpus", "'-1' is not a GPU index"]),
        (
            &["--trt-workspace", "99999999999999"],
            &["--trt-workspace", "1 to 1048576"],
        ),
        (&["--trt-workspace", "0"], &["--trt-workspace", "'0'"]),
        (&["--max-batch", "0"], &["--max-batch", "'0'", "1 to 16"]),
        (&["--max-batch", "17"], &["--max-batch", "'17'", "1 to 16"]),
        (
            &["--batch-deadline-ms", "-1"],
            &["--batch-deadline-ms", "'-1'", "0 to 10000"],
        ),
        (
            &["--batch-deadline-ms", "inf"],
            &["--batch-deadline-ms", "out of range"],
        ),
        (&["--threads", "lots"], &["--threads", "not a whole number"]),
        // Options whose values may start with a hyphen do not take the next option as one.
        (
            &["--tile", "--allow-corrupt"],
            &[
                "--tile",
                "a value is required",
                "'--allow-corrupt' is the next option",
            ],
        ),
        (
            &["--channels", "--allow-corrupt"],
            &[
                "--channels",
                "a value is required",
                "'--allow-corrupt' is the next option",
            ],
        ),
    ];
    for (extra, needles) in cases {
        assert_one_usage_line(&upscale_args(extra), "rave upscale", needles);
    }
    let bench = |extra: &[&str]| {
        let mut args = vec!["benchmark", "-i", "/nonexistent/in.mp4"];
        args.extend_from_slice(extra);
        run(&args)
    };
    let o = bench(&["--frames", "0"]);
    assert_one_usage_line(
        &o,
        "rave benchmark",
        &["--frames", "'0'", "1 to 1000000000"],
    );
    assert!(!stderr(&o).contains("--max-frames"), "{}", stderr(&o));
    assert_one_usage_line(
        &bench(&["--threads", "99999"]),
        "rave benchmark",
        &["--threads"],
    );
    assert_one_usage_line(
        &bench(&["--segment-frames", "0"]),
        "rave benchmark",
        &["--segment-frames", "'0'", "1 to 1000000000"],
    );
    for bad in ["-1", "abc"] {
        let o = run(&["segment", "--work", "/nonexistent/job", "--index", bad]);
        assert_one_usage_line(&o, "rave segment", &["--index", "0 to 1000000000"]);
    }
}

#[test]
fn crf_within_the_cli_range_is_still_checked_against_the_codec() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let o = upscale(
        &clip,
        &dir.path().join("o.mp4"),
        &fixture("nearest_x2.onnx"),
        &["--crf", "60"],
    );
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--crf 60 is out of range for h264: use 0-51"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_largest_accepted_values_run() {
    // (--threads 1024 is accepted too; not run here, on a shared 2-core machine.)
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 3);
    let o = upscale(
        &clip,
        &dir.path().join("o.mkv"),
        &fixture("nearest_x2.onnx"),
        &[
            "--channels",
            "64,64,64",
            "--max-frames",
            "1000000000",
            "--crf",
            "51",
            "--json",
        ],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["frames_out"], 3);
}

#[test]
fn argument_errors_are_one_line_with_a_pointer_to_help() {
    assert_one_usage_line(
        &upscale_args(&["--bogus"]),
        "rave upscale",
        &["unexpected argument '--bogus'"],
    );
    assert_one_usage_line(
        &run(&["upscale", "-i", "a.mp4"]),
        "rave upscale",
        &["required arguments were not provided: --output <OUT>"],
    );
    assert_one_usage_line(
        &upscale_args(&["--codec", "mpeg1"]),
        "rave upscale",
        &["invalid value 'mpeg1' for '--codec <CODEC>'; possible values: h264, hevc, av1"],
    );
    assert_one_usage_line(&run(&["frobnicate"]), "rave", &["unrecognized subcommand"]);
    assert_one_usage_line(
        &run(&["probe", "a.mp4", "--bogus"]),
        "rave probe",
        &["--bogus"],
    );
    // --json keeps the JSON object, with the same first line as its message.
    let o = upscale_args(&["--threads", "99999", "--json"]);
    assert_exit(&o, 2);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON error");
    assert_eq!(v["error"]["kind"], "usage");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("--threads") && msg.contains("0 to 1024"),
        "{msg}"
    );
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_negative_or_empty_preset_is_worded_like_any_other_bad_preset() {
    for (codec, preset, needle) in [
        (
            "av1",
            "-1",
            r#"--preset "-1" is not a libsvtav1 preset: use 0 (slowest) to 13 (fastest)"#,
        ),
        (
            "h264",
            "-1",
            r#"--preset "-1" is not a libx264 preset: use ultrafast"#,
        ),
        (
            "h264",
            "",
            r#"--preset "" is not a libx264 preset: use ultrafast"#,
        ),
    ] {
        let o = upscale_args(&["--codec", codec, "--preset", preset]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("rave: error: {needle}")), "{err}");
    }
}
