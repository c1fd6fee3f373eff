//! End-to-end encoder contract: a refused output or an early Ctrl+C ends promptly for every
//! encoder (SVT-AV1 used to hang), frame sizes an encoder cannot code are refused before any
//! work with one line that says what to do, and no encoder prints on the terminal.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Run `cmd` to the end, killing it (and failing the test) after `limit`.
fn run_bounded(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rave runs");
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?} (hung); stderr:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    (child.wait_with_output().unwrap(), took)
}

fn upscale_cmd(input: &Path, output: &Path, model: &Path, extra: &[&str]) -> Command {
    let mut c = rave();
    c.args(["upscale", "-i"])
        .arg(input)
        .arg("-o")
        .arg(output)
        .arg("-m")
        .arg(model)
        .args(extra);
    c
}

/// No line an encoder library prints itself (x264/x265/SVT-AV1 log prefixes).
fn assert_no_encoder_noise(err: &str) {
    for noise in ["Svt[", "x265 [", "x264 [", "[libx26", "[libsvtav1"] {
        assert!(
            !err.contains(noise),
            "encoder noise {noise:?} on stderr:\n{err}"
        );
    }
}

#[test]
fn av1_refused_by_the_container_exits_4_at_once() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "64x48", 3);
    let subs = dir.path().join("subs.srt");
    std::fs::write(&subs, "1\n00:00:00,000 --> 00:00:00,100\nHi\n").unwrap();
    let with_srt = dir.path().join("srt.mkv");
    ffmpeg(&[
        "-i",
        input.to_str().unwrap(),
        "-i",
        subs.to_str().unwrap(),
        "-map",
        "0",
        "-map",
        "1",
        "-c",
        "copy",
        "-c:s",
        "srt",
        with_srt.to_str().unwrap(),
    ]);
    let model = fixture("nearest_x2.onnx");
    for (input, output, expect) in [
        (
            &input,
            dir.path().join("out.mov"),
            "AV1 video cannot be stored in QuickTime (.mov) by this FFmpeg; write to .mp4 or .mkv instead",
        ),
        (
            &with_srt,
            dir.path().join("out.mp4"),
            "stream #2 (subtitle subrip) cannot be stored in MP4 by this FFmpeg; write to .mkv instead",
        ),
    ] {
        let cmd = upscale_cmd(input, &output, &model, &["--codec", "av1"]);
        let (o, took) = run_bounded(cmd, Duration::from_secs(30));
        println!(
            "{} refused in {:.3} s",
            output.display(),
            took.as_secs_f64()
        );
        assert_exit(&o, 4);
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{}: {expect}", output.display())),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert_no_encoder_noise(&err);
        assert!(took < Duration::from_secs(10), "took {took:?}");
        assert!(!output.exists());
    }
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

#[test]
fn ctrl_c_before_the_first_frame_stops_av1_like_h264() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "160x96", 10);
    let slow = installed_model("realesrgan-x4plus");
    let mut outcome = Vec::new();
    for codec in ["h264", "av1"] {
        let output = dir.path().join(format!("{codec}.mkv"));
        // RRDBNet x4 takes seconds per frame on a CPU: Ctrl+C comes before the first one.
        let mut child = upscale_cmd(
            &input,
            &output,
            &slow,
            &["--codec", codec, "--progress", "jsonl", "--json"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        assert!(
            lines
                .by_ref()
                .map_while(Result::ok)
                .any(|l| l.contains("\"started\"")),
            "{codec}: the run never started"
        );
        let asked = Instant::now();
        let kill = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
        while child.try_wait().unwrap().is_none() {
            if asked.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("{codec}: still running 30 s after Ctrl+C (hung)");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = asked.elapsed();
        let status = child.wait().unwrap();
        let err = rest.join().unwrap().join("\n");
        println!("{codec}: stopped {:.3} s after Ctrl+C", took.as_secs_f64());
        assert!(took < Duration::from_secs(10), "{codec}: took {took:?}");
        assert_no_encoder_noise(&err);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        let frames_out = serde_json::from_str::<serde_json::Value>(&out)
            .ok()
            .and_then(|v| v["frames_out"].as_u64());
        outcome.push((status.code(), frames_out));
    }
    assert_eq!(outcome[0].0, Some(130), "h264: {outcome:?}");
    assert_eq!(outcome[1], outcome[0], "av1 ends like h264");
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

/// A 17x9 clip (odd in both directions).
fn odd_clip(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("odd.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=34x18:rate=25:duration=0.12",
        "-vf",
        "scale=17:9,format=yuv444p",
        "-c:v",
        "libx264",
        path.to_str().unwrap(),
    ]);
    assert_eq!(video_field(&path, "width"), "17");
    path
}

#[test]
fn odd_output_sizes_are_refused_before_any_work_for_every_codec() {
    let dir = scratch();
    let input = odd_clip(dir.path());
    let x3 = installed_model("realesr-animevideov3-x3");
    let crop = "crop the input to 16x8 first (ffmpeg -i INPUT -map 0 -map -0:d? -c copy -c:v:0 ffv1 -filter:v:0 crop=16:8:0:0 CROPPED.mkv)";
    for (codec, needs, fix) in [
        (
            "h264",
            "libx264 needs an even width and height of at least 2x2 and at most 16384x16384",
            crop.to_string(),
        ),
        (
            "hevc",
            "libx265 needs an even width and height of at least 16x16, and a width outside 34..48 (this build crashes on those)",
            format!("{crop} and use --codec h264"),
        ),
        (
            "av1",
            "libsvtav1 needs an even width and height of at least 64x64 and at most 16384x8704",
            format!("{crop} and use --codec h264"),
        ),
    ] {
        let output = dir.path().join(format!("{codec}.mkv"));
        let o = upscale(&input, &output, &x3, &["--codec", codec]);
        assert_exit(&o, 4);
        let err = stderr(&o);
        assert_eq!(
            err.trim(),
            format!("rave: error: 17x9 upscaled x3 is 51x27, but {needs}; {fix}"),
            "{codec}"
        );
        assert!(!output.exists());
        let o = upscale(&input, &output, &x3, &["--codec", codec, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["error"]["kind"], "output_size_unsupported");
        assert_eq!(v["error"]["code"], 307);
    }
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
    // The command given works and keeps every stream (once it was `-vf crop -c:a copy`,
    // which kept one audio track of several and re-encoded the video lossily).
    let two_tracks = dir.path().join("two-tracks.mkv");
    ffmpeg(&[
        "-i",
        input.to_str().unwrap(),
        "-f",
        "lavfi",
        "-i",
        "sine=duration=0.12",
        "-map",
        "0:v",
        "-map",
        "1",
        "-map",
        "1",
        "-c:v",
        "copy",
        two_tracks.to_str().unwrap(),
    ]);
    let command = crop.split_once("(ffmpeg ").unwrap().1.trim_end_matches(')');
    let cropped = dir.path().join("CROPPED.mkv");
    let args: Vec<String> = command
        .split(' ')
        .map(|a| match a {
            "INPUT" => two_tracks.display().to_string(),
            "CROPPED.mkv" => cropped.display().to_string(),
            a => a.to_string(),
        })
        .collect();
    ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(video_field(&cropped, "codec_name"), "ffv1");
    let streams = ffprobe(
        &cropped,
        &["-show_entries", "stream=codec_type", "-of", "csv=p=0"],
    );
    assert_eq!(
        streams.lines().filter(|l| *l == "audio").count(),
        2,
        "{streams}"
    );
    let output = dir.path().join("cropped-x3.mkv");
    assert_exit(&upscale(&cropped, &output, &x3, &[]), 0);
    assert_eq!(video_field(&output, "width"), "48");
}

#[test]
fn a_size_too_small_for_svt_av1_is_refused_and_h264_takes_it() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "24x16", 3);
    let model = fixture("nearest_x2.onnx");
    let output = dir.path().join("out.mkv");
    let o = upscale(&input, &output, &model, &["--codec", "av1"]);
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains("24x16 upscaled x2 is 48x32, but libsvtav1 needs an even width and height of at least 64x64")
            && err.trim_end().ends_with("use --codec h264"),
        "{err}"
    );
    assert_no_encoder_noise(&err);
    let o = upscale(&input, &output, &model, &["--codec", "h264"]);
    assert_exit(&o, 0);
    assert_eq!(video_field(&output, "width"), "48");
}

/// libx265 3.5 corrupts its heap on widths 34 to 48 (glibc aborts the process with
/// "corrupted size vs. prev_size"): such a size is refused before any work, like any other
/// size the encoder cannot code.
#[test]
fn a_width_libx265_crashes_on_is_refused_before_any_work() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    for size in ["24x12", "20x32"] {
        let input = make_clip(dir.path(), &format!("{size}.mp4"), size, 3);
        let output = dir.path().join(format!("{size}.mkv"));
        let o = upscale(
            &input,
            &output,
            &model,
            &["--codec", "hevc", "--device", "cpu"],
        );
        assert_exit(&o, 4);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("rave: error: {size} upscaled x2 is "))
                && err.contains("a width outside 34..48 (this build crashes on those)")
                && err.trim_end().ends_with("use --codec h264"),
            "{err}"
        );
        assert!(!output.exists());
    }
    let input = make_clip(dir.path(), "26x12.mp4", "26x12", 3);
    let output = dir.path().join("52.mkv");
    let o = upscale(
        &input,
        &output,
        &model,
        &["--codec", "hevc", "--device", "cpu"],
    );
    assert_exit(&o, 0);
    assert_eq!(video_field(&output, "width"), "52");
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

/// Every encoder codes a stream of one or two frames: a short clip, segments of one or two
/// frames, a job's last segment. x265 left the decode timestamps of such a stream to
/// uninitialised memory, and the MP4 segment muxer refused them ("Not yet implemented in
/// FFmpeg" or "Invalid argument"), in a fresh process nearly always.
#[test]
fn one_or_two_frames_encode_with_every_codec() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let intra = d.join("intra.mp4");
    lavfi_clip(
        &intra,
        &["testsrc2=size=64x48:rate=10:duration=2"],
        &["-c:v", "libx264", "-g", "1"],
    );
    let mut cases = Vec::new();
    for codec in ["hevc", "h264", "av1"] {
        cases.extend([(codec, "1", "1"), (codec, "2", "2")]);
    }
    // Every segment a fresh encoder of one or two frames (20 of them: x265's leftover
    // memory is not garbage every time).
    for codec in ["hevc", "h264"] {
        cases.extend([(codec, "20", "1"), (codec, "20", "2")]);
    }
    for (codec, frames, segment) in cases {
        let out = d.join(format!("{codec}-{frames}-{segment}.mkv"));
        let extra = [
            "--codec",
            codec,
            "--max-frames",
            frames,
            "--segment-frames",
            segment,
        ];
        let o = upscale(&intra, &out, &m, &extra);
        assert_exit(&o, 0);
        assert_eq!(
            frame_times(&out).len(),
            frames.parse::<usize>().unwrap(),
            "{codec} {frames} frames in segments of {segment}"
        );
    }
}
