//! The GPU options as a user meets them on any machine: bad values are usage errors (exit 2)
//! naming the flag; `--device gpu` without a usable GPU is one line with exit 6 and the way
//! out; `--device auto` says in the report why the CPU ran the model.

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
        (&["--batch-deadline-ms", "20000"][..], "--batch-deadline-ms"),
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
        .args(["--backend", "cuda", "--device", "cpu", "--json"])
        .env("RAVE_ORT_TENSORRT", "maybe")
        .output()
        .unwrap();
    assert_exit(&o, 0);
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
