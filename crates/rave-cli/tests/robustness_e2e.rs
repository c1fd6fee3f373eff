//! Damaged input and interruption: a corrupt stream is refused with a count of bad frames
//! (or upscaled with --allow-corrupt), and Ctrl+C stops promptly leaving a finalized,
//! playable `.partial` file and nothing at the target path.

mod common;
mod corpus;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// A 50-frame H.264 MPEG-TS with 3000 bytes of garbage written over its middle.
fn corrupt_ts(dir: &Path) -> std::path::PathBuf {
    let clean = dir.join("clean.ts");
    lavfi_clip(
        &clean,
        &["testsrc2=size=64x48:rate=25:duration=2", "sine=duration=2"],
        &["-c:v", "libx264", "-g", "10", "-c:a", "aac"],
    );
    let mut bytes = std::fs::read(&clean).unwrap();
    let start = bytes.len() * 2 / 5;
    corpus::fill_garbage(&mut bytes[start..start + 3000], 0x2545_f491);
    let bad = dir.join("bad.ts");
    std::fs::write(&bad, bytes).unwrap();
    bad
}

#[test]
fn corrupt_input_is_refused_with_a_count_or_upscaled_when_allowed() {
    let dir = scratch();
    let input = corrupt_ts(dir.path());
    let output = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let o = upscale(&input, &output, &m, &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.ts: damaged input: ") && err.contains("--allow-corrupt"),
        "{err}"
    );
    assert!(!output.exists());

    let o = upscale(&input, &output, &m, &["--allow-corrupt", "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let damage = &v["input_damage"];
    let missing = damage["frames_missing"].as_u64().unwrap();
    let good = v["frames_out"].as_u64().unwrap();
    assert!(damage["demux_errors"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        good + missing,
        50,
        "every frame is either written or counted as missing: {v}"
    );
    assert_eq!(frame_times(&output).len() as u64, good);
    // Said as the run ends too: a warning event with --progress jsonl.
    std::fs::remove_file(&output).unwrap();
    let o = upscale(
        &input,
        &output,
        &m,
        &["--allow-corrupt", "--progress", "jsonl"],
    );
    assert_exit(&o, 0);
    assert!(
        stderr(&o).lines().any(|l| l.contains("\"warning\"")
            && l.contains("damaged input (kept with --allow-corrupt)")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ctrl_c_stops_promptly_and_leaves_a_finalized_partial_file() {
    let dir = scratch();
    let input = make_photo_clip(dir.path(), "in.mp4", 160, 96, 150);
    let output = dir.path().join("out.mp4");
    let mut child = rave()
        .args([
            "upscale",
            "-i",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ])
        .args(["--progress", "jsonl", "--json", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines();
    let mut progress_seen = 0;
    for line in lines.by_ref() {
        if line.unwrap().contains("\"progress\"") {
            progress_seen += 1;
            if progress_seen == 3 {
                break;
            }
        }
    }
    assert_eq!(
        progress_seen, 3,
        "run ended before three frames were written"
    );
    let asked = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let took = asked.elapsed();
    println!("stopped {:.3} s after Ctrl+C", took.as_secs_f64());
    assert_eq!(status.code(), Some(130), "stderr after Ctrl+C: {rest:?}");
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");

    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).expect("report after Ctrl+C");
    assert_eq!(v["status"], "partial");
    let partial = dir.path().join("out.partial.mp4");
    assert_eq!(v["output"], partial.to_str().unwrap());
    assert!(!output.exists(), "the target path must not look complete");
    let written = v["frames_out"].as_u64().unwrap();
    assert!((3..150).contains(&written), "frames_out {written}");
    assert_eq!(
        frame_times(&partial).len() as u64,
        written,
        "partial file plays every frame written"
    );
    assert!(
        !packets(&partial, "a").is_empty(),
        "partial file keeps its audio"
    );
    // ...up to its last frame, not beyond (the reader runs ahead of the encoder).
    let last_frame: f64 = frame_times(&partial).last().unwrap().parse().unwrap();
    let last_audio: f64 = packets(&partial, "a")
        .iter()
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .fold(f64::MIN, f64::max);
    assert!(
        last_audio <= last_frame + 0.1,
        "audio runs to {last_audio} s, the video to {last_frame} s"
    );
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

#[test]
fn a_mid_stream_size_change_is_refused_with_the_frame_and_sizes() {
    let dir = scratch();
    let a = dir.path().join("a.ts");
    let b = dir.path().join("b.ts");
    for (path, size) in [(&a, "64x48"), (&b, "80x64")] {
        lavfi_clip(
            path,
            &[&format!("testsrc2=size={size}:rate=10")],
            &["-t", "1", "-c:v", "libx264"],
        );
    }
    // One stream whose size changes, muxed continuously (no container damage at the seam).
    let joined = dir.path().join("ab.ts");
    concat_copy(&[&a, &b], &joined);
    let out = dir.path().join("out.mp4");
    for extra in [&[][..], &["--allow-corrupt"][..]] {
        let o = upscale(&joined, &out, &fixture("nearest_x2.onnx"), extra);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(err.contains("changes size mid-stream at frame 10"), "{err}");
        assert!(err.contains("64x48 -> 80x64"), "{err}");
        assert!(!out.exists(), "no output for a refused input");
        assert!(temp_files_left(dir.path()).is_empty());
    }
}

#[test]
fn a_video_stream_without_a_readable_frame_size_is_an_input_error() {
    let dir = scratch();
    let raw = dir.path().join("raw.hevc");
    lavfi_clip(
        &raw,
        &["testsrc2=size=64x48:rate=25:duration=0.4"],
        &["-c:v", "libx265", "-x265-params", "log-level=error"],
    );
    // Keep the parameter sets, cut before the first picture: FFmpeg reads the stream as 0x0.
    let bytes = std::fs::read(&raw).unwrap();
    let first_picture = bytes
        .windows(4)
        .position(|w| w[..3] == [0, 0, 1] && (16..=21).contains(&((w[3] >> 1) & 0x3f)))
        .expect("an IRAP picture");
    let input = dir.path().join("headers-only.hevc");
    std::fs::write(&input, &bytes[..first_picture]).unwrap();
    assert_eq!(video_field(&input, "width"), "0");

    for model in [
        fixture("nearest_x2.onnx"),
        installed_model("realesr-animevideov3-x2"),
    ] {
        let o = upscale(
            &input,
            &dir.path().join("out.mkv"),
            &model,
            &["--device", "cpu"],
        );
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("rave: error: ")
                && err.contains("headers-only.hevc")
                && err.contains("no frame size")
                && !err.contains("model"),
            "{err}"
        );
    }
    let o = run(&["benchmark", "-i", input.to_str().unwrap(), "--frames", "1"]);
    assert_exit(&o, 3);
    assert!(temp_files_left(dir.path()).is_empty());
}
