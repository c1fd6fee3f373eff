//! The GPU options as a user meets them on any machine: bad values are usage errors (exit 2)
//! naming the flag; `--device gpu` without a usable GPU is one line with exit 6 and the way
//! out; `--device auto` says in the report why the CPU ran the model, and warns about GPU
//! options it ignores; a provider asked for by name needs the GPU; GPU options with
//! `--device cpu` are refused.

mod common;

use common::*;

fn clip(dir: &std::path::Path) -> std::path::PathBuf {
    make_clip(dir, "in.mp4", "64x48", 3)
}

fn has_gpu() -> bool {
    let o = run(&["devices", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    v["gpus"].as_array().is_some_and(|g| !g.is_empty())
}

#[test]
fn bad_gpu_option_values_are_usage_errors_naming_the_flag() {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let model = fixture("nearest_x2.onnx");
    for (extra, needle) in [
        (&["--precision", "int8"][..], "--int8-calibration"),
        (&["--int8-calibration", "t.table"][..], "--precision int8"),
        (&["--max-batch", "0"][..], "--max-batch"),
        (&["--max-batch", "99"][..], "--max-batch"),
        (&["--batch-deadline-ms=-1"][..], "--batch-deadline-ms"),
        (&["--batch-deadline-ms", "-1"][..], "--batch-deadline-ms"),
        (&["--batch-deadline-ms", "20000"][..], "--batch-deadline-ms"),
        (&["--batch-deadline-ms", "NaN"][..], "--batch-deadline-ms"),
        (&["--backend", "vulkan"][..], "vulkan"),
        (&["--device", "tpu"][..], "tpu"),
    ] {
        let o = upscale(&input, &out, &model, extra);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
        assert!(!out.exists(), "{extra:?} left an output");
    }
}

#[test]
fn unknown_rave_ort_tensorrt_value_is_a_usage_error() {
    let dir = scratch();
    let input = clip(dir.path());
    let o = rave()
        .args(["upscale", "-i", input.to_str().unwrap(), "-o"])
        .arg(dir.path().join("o.mp4"))
        .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
        .env("RAVE_ORT_TENSORRT", "maybe")
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("RAVE_ORT_TENSORRT=maybe"),
        "{}",
        stderr(&o)
    );
    // --backend wins over the environment.
    let o = rave()
        .args(["upscale", "-i", input.to_str().unwrap(), "-o"])
        .arg(dir.path().join("o.mp4"))
        .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
        .args(["--backend", "auto", "--json"])
        .env("RAVE_ORT_TENSORRT", "maybe")
        .output()
        .unwrap();
    assert_exit(&o, 0);
}

#[test]
fn gpu_options_with_device_cpu_are_refused_in_one_line() {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let model = fixture("nearest_x2.onnx");
    for (extra, named) in [
        (&["--precision", "fp16"][..], "--precision only applies"),
        (&["--backend", "auto"][..], "--backend only applies"),
        (&["--gpu", "0"][..], "--gpu only applies"),
        (&["--cuda-graph"][..], "--cuda-graph only applies"),
        (&["--decoder", "software"][..], "--decoder only applies"),
        (&["--vram-limit", "4GiB"][..], "--vram-limit only applies"),
        (&["--gpus", "0"][..], "--gpus only applies"),
        (
            &["--engine-cache", "/tmp"][..],
            "--engine-cache only applies",
        ),
        (
            &["--trt-workspace", "64"][..],
            "--trt-workspace only applies",
        ),
        (
            &["--batch-deadline-ms", "2"][..],
            "--batch-deadline-ms only applies",
        ),
        (
            &["--max-batch", "2", "--precision", "fp32"][..],
            "--precision, --max-batch only apply",
        ),
        (
            &["--precision", "int8", "--int8-calibration", "t.table"][..],
            "--precision, --int8-calibration only apply",
        ),
    ] {
        let mut args = vec!["--device", "cpu"];
        args.extend_from_slice(extra);
        let o = upscale(&input, &out, &model, &args);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.starts_with("rave: error: ") && err.contains(named) && err.contains("GPU path"),
            "{extra:?}: {err}"
        );
        assert!(!out.exists());
    }
    // Without GPU options --device cpu runs; RAVE_ORT_TENSORRT is not an option given.
    let o = rave()
        .args(["upscale", "-i", input.to_str().unwrap(), "-o"])
        .arg(&out)
        .args(["-m", model.to_str().unwrap(), "--device", "cpu"])
        .env("RAVE_ORT_TENSORRT", "cuda")
        .output()
        .unwrap();
    assert_exit(&o, 0);
}

#[test]
fn device_auto_on_the_cpu_warns_once_about_gpu_options_it_ignores() {
    if has_gpu() {
        return;
    }
    let dir = scratch();
    let input = clip(dir.path());
    let model = fixture("nearest_x2.onnx");
    let o = upscale(
        &input,
        &dir.path().join("out.mp4"),
        &model,
        &["--precision", "fp32", "--max-batch", "1"],
    );
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rave: warning: --precision, --max-batch ignored:"),
        "{err}"
    );
    // A benchmark runs the pipeline twice: still one warning.
    let o = run(&[
        "benchmark",
        "-i",
        input.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--cuda-graph",
    ]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert_eq!(err.matches("--cuda-graph ignored").count(), 1, "{err}");
    // Without GPU options nothing is said.
    let o = upscale(&input, &dir.path().join("plain.mp4"), &model, &[]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_provider_asked_for_by_name_needs_the_gpu_with_device_auto() {
    if has_gpu() {
        return;
    }
    for (flag, env, who) in [
        (Some("cuda"), None, "--backend cuda"),
        (Some("tensorrt"), None, "--backend tensorrt"),
        (Some("native"), None, "--backend native"),
        (None, Some("trt"), "RAVE_ORT_TENSORRT=trt"),
        (None, Some("cuda-only"), "RAVE_ORT_TENSORRT=cuda-only"),
    ] {
        let mut extra = Vec::new();
        if let Some(f) = flag {
            extra.extend(["--backend", f]);
        }
        let dir = scratch();
        let input = clip(dir.path());
        let out = dir.path().join("out.mp4");
        let mut cmd = rave();
        cmd.args(["upscale", "-i", input.to_str().unwrap(), "-o"])
            .arg(&out)
            .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
            .args(&extra);
        match env {
            Some(v) => cmd.env("RAVE_ORT_TENSORRT", v),
            None => cmd.env_remove("RAVE_ORT_TENSORRT"),
        };
        let o = cmd.output().unwrap();
        assert_exit(&o, 6);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("no usable GPU") && err.contains(&format!("{who} asks for")),
            "{who}: {err}"
        );
        assert!(!out.exists() && temp_files_left(dir.path()).is_empty());
    }
}

/// Upscale with `extra` on a machine without a GPU: exit 6, no output, no temp files;
/// returns stderr (None where a GPU is present: the GPU runs cover that case).
fn refused_without_gpu(extra: &[&str]) -> Option<String> {
    if has_gpu() {
        return None;
    }
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), extra);
    assert_exit(&o, 6);
    assert!(!out.exists(), "{extra:?} left an output");
    assert!(temp_files_left(dir.path()).is_empty());
    Some(stderr(&o))
}

#[test]
fn device_gpu_without_a_gpu_fails_with_one_line_and_exit_6() {
    let Some(err) = refused_without_gpu(&["--device", "gpu"]) else {
        return;
    };
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--device cpu"), "{err}");
}

#[test]
fn device_auto_reports_why_the_cpu_ran() {
    if has_gpu() {
        return;
    }
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["backend"]["name"], "onnxruntime-cpu");
    let reason = v["backend"]["reason"].as_str().unwrap();
    assert!(reason.contains("GPU path is not available"), "{reason}");
    assert!(v["gpu"].is_null());
}

#[test]
fn encoder_names_the_codec_and_must_agree_with_codec() {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mkv");
    let model = fixture("nearest_x2.onnx");
    let o = upscale(
        &input,
        &out,
        &model,
        &["--encoder", "x265", "--codec", "h264"],
    );
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--encoder x265 writes hevc"),
        "{}",
        stderr(&o)
    );
    let o = upscale(
        &input,
        &out,
        &model,
        &["--encoder", "x265", "--device", "cpu"],
    );
    assert_exit(&o, 0);
    assert_eq!(video_field(&out, "codec_name"), "hevc");
}

/// `rave upscale --encoder nvenc ARGS` of a clip, refused with exit 2 and no output: its
/// error.
fn nvenc_options_refused(args: &[&str]) -> String {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let mut all = vec!["--encoder", "nvenc"];
    all.extend_from_slice(args);
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &all);
    assert_exit(&o, 2);
    assert!(!out.exists());
    stderr(&o)
}

#[test]
fn encoder_nvenc_with_device_cpu_is_a_conflict_of_options() {
    // Refused before any session is tried, with or without a GPU: the frames are on the CPU.
    let err = nvenc_options_refused(&["--device", "cpu"]);
    assert!(
        err.contains("--device gpu") && err.contains("--encoder auto"),
        "{err}"
    );
}

#[test]
fn encoder_nvenc_without_nvenc_says_why_and_the_way_out() {
    // Where a GPU is present: the H200 answers the same way (no NVENC); see docs/GPU_RESULTS.md.
    let Some(err) = refused_without_gpu(&["--encoder", "nvenc"]) else {
        return;
    };
    assert!(
        err.contains("h264_nvenc") && err.contains("--encoder auto"),
        "{err}"
    );
}

#[test]
fn encoder_nvenc_checks_the_gpus_of_the_list_not_gpu_0() {
    // Each GPU of --gpus runs its own encoders, so the list is resolved before any NVENC
    // session is tried: a GPU that does not exist is the error, exit 2.
    let err = nvenc_options_refused(&["--gpus", "0,63"]);
    assert!(err.starts_with("rave: error: --gpus 0,63: "), "{err}");
}

#[test]
fn gpus_this_machine_lacks_are_refused_before_any_work() {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let model = fixture("nearest_x2.onnx");
    // This machine has fewer than 64 GPUs (the CI machine none): one line, exit 2, nothing
    // written, no work folder.
    let o = upscale(&input, &out, &model, &["--gpus", "0,63"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("rave: error: --gpus 0,63: "), "{err}");
    assert!(err.contains("rave devices"), "{err}");
    assert!(!out.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("rave-work") || n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // --gpus 0 is today's run: on this machine the CPU runs it under auto. Any other GPU
    // alone is one this machine lacks (the CI machine has none; this test runs there).
    let o = upscale(&input, &out, &model, &["--gpus", "0"]);
    assert_exit(&o, 0);
    if !std::path::Path::new("/dev/nvidiactl").exists() {
        let o = upscale(&input, &out, &model, &["--gpus", "1", "--overwrite"]);
        assert_exit(&o, 2);
        assert!(
            stderr(&o).starts_with("rave: error: --gpus 1: "),
            "{}",
            stderr(&o)
        );
    }
    for bad in ["0,0", "x", "64"] {
        let o = upscale(&input, &out, &model, &["--gpus", bad, "--overwrite"]);
        assert_exit(&o, 2);
    }
}

#[test]
fn a_bad_gpu_stand_in_count_is_one_line_before_any_work() {
    let dir = scratch();
    let input = clip(dir.path());
    let out = dir.path().join("out.mp4");
    let model = fixture("nearest_x2.onnx");
    for (bad, why) in [
        ("x", "not a number"),
        ("1", "2 to 8 GPUs"),
        ("9", "2 to 8 GPUs"),
    ] {
        let o = rave()
            .env("RAVE_TEST_GPU_COPIES", bad)
            .args(["upscale", "-i"])
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .arg("-m")
            .arg(&model)
            .output()
            .unwrap();
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("rave: error: RAVE_TEST_GPU_COPIES={bad}: "))
                && err.contains(why),
            "{err}"
        );
        assert!(!out.exists());
    }
}
