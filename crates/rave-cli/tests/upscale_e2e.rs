//! End-to-end CPU upscales with the real animevideov3 x2 model: frame count, size, every
//! timestamp, byte-identical audio, the JSON report, and the picture against a reference
//! run of the same model on the same frames decoded independently (by the ffmpeg CLI).

mod common;

use std::path::Path;

use common::*;
use rave_core::backend::Upscaler;
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};
use rave_core::frame::YuvFrame;
use rave_cuda::{rgb_to_yuv420, yuv420_to_rgb};
use rave_tensorrt::{CpuBackend, ModelOptions, OrtRuntime, RuntimeCandidate};

const W: u32 = 128;
const H: u32 = 72;
const FRAMES: u32 = 10;

/// The reference: the model run on each input frame as the ffmpeg CLI decodes it, through
/// RAVE's reference colour conversions (the oracle the kernels are tested against), as
/// planar yuv420p bytes.
fn reference_yuv(input: &Path, model: &Path) -> Vec<u8> {
    let lib = model
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("lib/libonnxruntime.so");
    let runtime = OrtRuntime::load(&[RuntimeCandidate::new(lib, "test")])
        .expect("ONNX Runtime (scripts/setup.sh)");
    let backend = CpuBackend::new(runtime, model, &ModelOptions { threads: 2 }).unwrap();
    let color = ColorInfo {
        matrix: ColorMatrix::Bt709,
        range: ColorRange::Limited,
        bit_depth: 8,
    };
    let (w, h) = (W as usize, H as usize);
    let frame_bytes = w * h * 3 / 2;
    let mut out = Vec::new();
    for bytes in decode_yuv420(input).chunks(frame_bytes) {
        let mut frame = YuvFrame::zeroed(W, H, 8);
        let widen = |b: &[u8]| b.iter().map(|v| u16::from(*v)).collect::<Vec<_>>();
        frame.y = widen(&bytes[..w * h]);
        frame.u = widen(&bytes[w * h..w * h * 5 / 4]);
        frame.v = widen(&bytes[w * h * 5 / 4..]);
        let up = backend.upscale(&[yuv420_to_rgb(&frame, &color)]).unwrap();
        let up = &up[0];
        let yuv = rgb_to_yuv420(up, &color, 8);
        for plane in [&yuv.y, &yuv.u, &yuv.v] {
            out.extend(plane.iter().map(|v| *v as u8));
        }
    }
    out
}

#[test]
fn real_model_upscale_keeps_frames_timestamps_audio_and_matches_reference() {
    let dir = scratch();
    let input = make_photo_clip(dir.path(), "in.mp4", W, H, FRAMES);
    let output = dir.path().join("out.mp4");
    let o = run(&[
        "upscale",
        "-i",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--json",
        "--progress",
        "off",
    ]);
    assert_exit(&o, 0);

    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    assert_eq!(report["status"], "complete");
    assert_eq!(report["frames_in"], FRAMES);
    assert_eq!(report["frames_out"], FRAMES);
    assert_eq!(report["model"]["name"], "realesr-animevideov3-x2");
    assert_eq!(report["model"]["scale"], 2);
    assert_eq!(report["backend"]["name"], "onnxruntime-cpu");
    assert_eq!(report["encoder"]["codec"], "h264");
    assert_eq!(report["output_size"], serde_json::json!([2 * W, 2 * H]));
    assert!(report["fps"].as_f64().unwrap() > 0.0);
    assert!(report["elapsed_s"].as_f64().unwrap() > 0.0);
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["decode", "preprocess", "infer", "postprocess", "encode"]
    );
    for s in report["stages"].as_array().unwrap() {
        assert_eq!(s["frames"], FRAMES, "{s}");
    }
    // The pipeline's window (first frame decoded to last written) holds all of the one
    // encode thread's work, its flush included, and lies within the whole run.
    let pipeline_s = report["pipeline_s"].as_f64().unwrap();
    let encode_busy = report["stages"][4]["busy_s"].as_f64().unwrap();
    assert!(
        encode_busy <= pipeline_s && pipeline_s <= report["elapsed_s"].as_f64().unwrap(),
        "encode busy {encode_busy} s, pipeline {pipeline_s} s, run {}",
        report["elapsed_s"]
    );

    assert_eq!(video_field(&output, "width"), (2 * W).to_string());
    assert_eq!(video_field(&output, "height"), (2 * H).to_string());
    assert_eq!(
        frame_times(&output),
        frame_times(&input),
        "frame timestamps"
    );
    let audio_in = packets(&input, "a");
    assert!(!audio_in.is_empty());
    assert_eq!(
        packets(&output, "a"),
        audio_in,
        "audio packets byte-identical"
    );
    assert_eq!(video_field(&output, "color_space"), "bt709");
    assert_eq!(video_field(&output, "color_primaries"), "bt709");

    let reference = reference_yuv(&input, &installed_model("realesr-animevideov3-x2"));
    let got = decode_yuv420(&output);
    assert_eq!(got.len(), reference.len(), "same frame count and size");
    let db = psnr(&got, &reference);
    println!("PSNR vs reference run of the model: {db:.2} dB");
    assert!(db >= 35.0, "PSNR {db:.2} dB < 35 dB");
}

/// Colour handling checked against FFmpeg's own conversions: with a nearest-neighbour x2
/// model, the output decoded to RGB by the ffmpeg CLI must match the input decoded to RGB
/// and pixel-doubled.
#[test]
fn colours_match_ffmpeg_conversion_for_a_nearest_neighbour_model() {
    let dir = scratch();
    let input = make_photo_clip(dir.path(), "in.mp4", W, H, 4);
    let output = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let o = upscale(&input, &output, &m, &["--crf", "0"]);
    assert_exit(&o, 0);
    let src = decode_rgb(&input);
    let (w, h) = (W as usize, H as usize);
    let mut doubled = Vec::with_capacity(src.len() * 4);
    for frame in src.chunks(w * h * 3) {
        for y in 0..2 * h {
            for x in 0..2 * w {
                let i = ((y / 2) * w + x / 2) * 3;
                doubled.extend_from_slice(&frame[i..i + 3]);
            }
        }
    }
    let got = decode_rgb(&output);
    assert_eq!(got.len(), doubled.len());
    let db = psnr(&got, &doubled);
    println!("PSNR vs FFmpeg-converted nearest x2: {db:.2} dB");
    assert!(
        db >= 35.0,
        "PSNR {db:.2} dB < 35 dB: colour conversion disagrees with FFmpeg's"
    );
}

#[test]
fn progress_jsonl_reports_every_frame() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 5);
    let output = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let o = upscale(&input, &output, &m, &["--progress", "jsonl"]);
    assert_exit(&o, 0);
    let events = jsonl_events(&o);
    assert_eq!(events.first().unwrap()["event"], "started");
    assert_eq!(events.first().unwrap()["frames_total"], 5);
    let progress: Vec<_> = events.iter().filter(|e| e["event"] == "progress").collect();
    assert_eq!(progress.len(), 5);
    assert_eq!(progress.last().unwrap()["frames_done"], 5);
    assert_eq!(events.last().unwrap()["event"], "finished");
    assert_eq!(events.last().unwrap()["status"], "complete");
    assert!(stdout(&o).contains("upscaled"), "{}", stdout(&o));
}

/// The report times the start-up: the first frame within the run, and the steps before it
/// in the order they ended, in the JSON, in one line of the summary and (with `-v`) in the
/// log.
#[test]
fn the_report_times_the_start_up_to_the_first_frame() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 4);
    let m = fixture("nearest_x2.onnx");
    let cpu = ["--device", "cpu", "--progress", "off"];
    let json = [&cpu[..], &["--json"]].concat();
    let o = upscale(&input, &dir.path().join("a.mp4"), &m, &json);
    assert_exit(&o, 0);
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let first = r["first_frame_s"].as_f64().expect("first_frame_s");
    let elapsed = r["elapsed_s"].as_f64().unwrap();
    assert!(first > 0.0 && first <= elapsed, "{first} s of {elapsed} s");
    let steps = r["startup"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["probe", "index", "load_model", "first_frame"]);
    for s in steps {
        let (seconds, at) = (s["seconds"].as_f64().unwrap(), s["at_s"].as_f64().unwrap());
        assert!(seconds >= 0.0 && seconds <= at && at <= first, "{s}");
    }
    assert_eq!(steps[3]["at_s"].as_f64(), Some(first));
    // The CPU ran the model on ONNX Runtime, so the report names its library.
    assert!(
        r["backend"]["runtime_library"]
            .as_str()
            .is_some_and(|l| l.ends_with(".so")),
        "{}",
        r["backend"]
    );

    let o = rave()
        .arg("-v")
        .args(upscale_args(&input, &dir.path().join("b.mp4"), &m, &cpu))
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let summary = stdout(&o);
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("first frame after "))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(line.contains("load_model "), "{line}");
    let log = stderr(&o);
    for step in names {
        assert!(log.contains(&format!("start-up: {step} took ")), "{log}");
    }
}

/// `--max-frames N` makes an output of the first N frames, its audio ending with them (as
/// after Ctrl+C); with N past the end, the whole audio is there.
#[test]
fn max_frames_cuts_the_audio_with_the_video() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "32x32", 25);
    let m = fixture("nearest_x2.onnx");
    let whole_audio = packet_count(&input, "a");
    let cut = dir.path().join("cut.mkv");
    let o = upscale(&input, &cut, &m, &["--max-frames", "5", "--json"]);
    assert_exit(&o, 0);
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (r["status"].as_str(), r["frames_out"].as_u64()),
        (Some("complete"), Some(5))
    );
    assert_eq!(frame_times(&cut).len(), 5);
    // 5 frames at 25 fps are 0.2 s: the audio packets starting before then (48 kHz AAC,
    // 1024 samples a packet: about 10), not the whole second.
    let audio = packet_count(&cut, "a");
    assert!(
        audio > 0 && audio * 3 < whole_audio,
        "{audio} of {whole_audio} audio packets"
    );

    // N past the end, or exactly the frame count: everything stays.
    for n in ["100", "25"] {
        let all = dir.path().join(format!("all{n}.mkv"));
        assert_exit(&upscale(&input, &all, &m, &["--max-frames", n]), 0);
        assert_eq!(packet_count(&all, "a"), whole_audio, "--max-frames {n}");
    }
}
