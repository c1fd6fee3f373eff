//! End-to-end tests of segmented upscaling: a job cut at keyframes, upscaled segment by
//! segment and assembled, gives what one pass gives — across seams (B-frames, open GOPs),
//! VFR, odd sizes, 10-bit, other streams, an interruption and its resume, and --jobs.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A model slow enough on one thread (about 50 ms a 64x48 frame) for a run to be stopped
/// between segments, deterministic on one thread.
fn slow_model() -> PathBuf {
    installed_model("realesr-animevideov3-x2")
}

/// Upscale `input` with the nearest x2 fixture in segments of 5 frames (with `extra`), check
/// that the job was cut in at least 4 segments.
fn upscale_in_segments_of_5(input: &Path, output: &Path, extra: &[&str]) {
    let args: Vec<&str> = ["--segment-frames", "5"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    let v = upscale_ok(input, output, &fixture("nearest_x2.onnx"), &args);
    let (total, ..) = segment_counts(&v);
    assert!(total >= 4, "{}: {total} segments", input.display());
}

/// x264 at a keyframe every 5 frames, scene cuts off.
const X264_GOP_5: [&str; 10] = [
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-g",
    "5",
    "-keyint_min",
    "5",
    "-sc_threshold",
    "0",
];

/// `frames` frames (25 fps) of testsrc2 in `pix_fmt`, `w`x`h`, scrolling 6 pixels a frame so
/// that neighbouring frames differ clearly, encoded with `video`.
fn scrolling_clip(
    dir: &Path,
    name: &str,
    (w, h): (u32, u32),
    frames: u32,
    pix_fmt: &str,
    video: &[&str],
) -> PathBuf {
    let path = dir.join(name);
    let secs = format!("{}", f64::from(frames) / 25.0);
    let src = format!(
        "testsrc2=size={}x{h}:rate=25:duration={secs},format={pix_fmt},crop={w}:{h}:'mod(n*6\\,{})':0",
        3 * w,
        2 * w
    );
    lavfi_clip(&path, &[&src], video);
    path
}

/// The decode timestamps of every video packet (each must be there).
fn video_dts(path: &Path) -> Vec<i64> {
    packet_rows(path, "v:0", "dts", false)
        .iter()
        .map(|l| {
            l.trim_end_matches(',')
                .parse()
                .unwrap_or_else(|_| panic!("{}: a packet without a DTS: {l:?}", path.display()))
        })
        .collect()
}

/// (pts, is a keyframe) of every video packet, in decode order.
fn video_packets_flags(path: &Path) -> Vec<(i64, bool)> {
    packet_rows(path, "v:0", "pts,flags", false)
        .iter()
        .map(|l| {
            let (pts, flags) = l.split_once(',').expect("pts,flags");
            (pts.parse().expect("pts"), flags.starts_with('K'))
        })
        .collect()
}

/// What FFmpeg's decoder says about `path` at level error (nothing for a clean file).
fn decode_errors(path: &Path) -> String {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-f", "null", "-"])
        .output()
        .expect("ffmpeg");
    assert!(o.status.success(), "ffmpeg -f null: {}", stderr(&o));
    format!("{}{}", stdout(&o), stderr(&o))
}

/// The luma of every frame of `path`, scaled by nearest neighbour to `w`x`h`, 8-bit.
fn luma_frames(path: &Path, w: u32, h: u32) -> Vec<u8> {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-map", "0:v:0", "-vsync", "passthrough", "-vf"])
        .arg(format!("scale={w}:{h}:flags=neighbor"))
        .args(["-f", "rawvideo", "-pix_fmt", "gray", "-"])
        .output()
        .expect("ffmpeg");
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// Each output frame (the nearest-neighbour x2 model's, scaled back to the input's `w`x`h`)
/// shows its input frame's picture: its luma is close to that frame's, and closer to it
/// than to the frames beside it (a frame shifted, repeated or decoded from the wrong
/// references at a seam is not). Luma only: chroma goes through RGB and back.
fn assert_frames_are_the_inputs(input: &Path, output: &Path, w: u32, h: u32) {
    let a = luma_frames(input, w, h);
    let b = luma_frames(output, w, h);
    let size = (w * h) as usize;
    assert_eq!(a.len(), b.len(), "frames decoded from the input and output");
    let a: Vec<&[u8]> = a.chunks(size).collect();
    let b: Vec<&[u8]> = b.chunks(size).collect();
    for (i, out) in b.iter().enumerate() {
        let own = psnr(a[i], out);
        assert!(own > 32.0, "frame {i}: {own:.1} dB from its input frame");
        for j in [i.wrapping_sub(1), i + 1] {
            if let Some(other) = a.get(j) {
                let near = psnr(other, out);
                assert!(
                    own > near + 6.0,
                    "frame {i} is {own:.1} dB from its input frame, {near:.1} dB from frame {j}"
                );
            }
        }
    }
}

/// The checks every segmented output must pass against its input: every frame once, in
/// order, at its timestamp; a clean decode; increasing DTS (for containers that store it).
fn assert_seamless(input: &Path, output: &Path, dts_stored: bool) {
    let times = frame_times(input);
    assert_eq!(
        frame_times(output),
        times,
        "every input frame once, in order, at its time"
    );
    assert_eq!(decode_errors(output), "", "the output decodes cleanly");
    if dts_stored {
        let dts = video_dts(output);
        assert_eq!(dts.len(), times.len(), "one packet a frame");
        if let Some(w) = dts.windows(2).find(|w| w[0] >= w[1]) {
            panic!("DTS not strictly increasing: {} then {}", w[0], w[1]);
        }
    }
}
/// Start `rave upscale` with `args`, send `signal` once the manifest in `work` has `done`
/// finished segments, and return the run's output and the segments done after it ended.
/// Panics if the run ends first, or finishes every segment before the signal lands.
fn interrupt_after(args: &[&str], work: &Path, done: usize, signal: i32) -> (Output, usize) {
    let mut child = rave()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rave runs");
    let started = Instant::now();
    loop {
        if let Some((n, _)) = manifest_done(work)
            && n >= done
        {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            panic!(
                "the run ended before {done} segments were done; stderr:\n{}",
                stderr(&o)
            );
        }
        assert!(started.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's process id (not yet reaped); it reads no memory.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let o = child.wait_with_output().unwrap();
    let (n, total) = manifest_done(work).expect("the work folder is kept");
    assert!(
        n < total,
        "every segment was done before the signal: nothing left to resume"
    );
    (o, n)
}

#[test]
fn a_killed_and_resumed_run_gives_the_output_of_one_run() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 60);
    let model = slow_model();
    let opts = ["--segment-frames", "10", "--threads", "1"];

    let one = d.join("one.mp4");
    let v = upscale_ok(&input, &one, &model, &opts);
    assert_eq!(segment_counts(&v), (6, 6, 0, 1));
    assert!(
        !d.join(".one.mp4.rave-work").exists(),
        "removed after success"
    );

    let resumed = d.join("resumed.mp4");
    let work = d.join(".resumed.mp4.rave-work");
    let args = upscale_args(&input, &resumed, &model, &[CPU, &opts[..]].concat());
    let (o, done) = interrupt_after(&args, &work, 2, libc::SIGKILL);
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{}", stderr(&o));
    assert!(!resumed.exists());
    assert_eq!(temp_files_left(d), [".resumed.mp4.rave.tmp"]);

    let o = run(&args);
    assert_exit(&o, 0);
    let v = report(&o);
    assert_eq!(v["status"], "complete");
    let (total, processed, reused, _) = segment_counts(&v);
    assert!(reused >= 2, "reused {reused}");
    assert_eq!(
        reused, done as u64,
        "every segment done before the kill is reused"
    );
    assert_eq!((total, processed), (6, 6 - reused));
    assert_eq!(v["frames_out"], 60);
    assert!(!work.exists(), "removed after the resumed run's success");
    assert_eq!(
        temp_files_left(d),
        Vec::<String>::new(),
        "the killed run's temp swept"
    );

    assert_eq!(frame_entries(&resumed, "pts").len(), 60);
    assert_eq!(frame_entries(&resumed, "pts"), frame_entries(&one, "pts"));
    let audio = audio_packets(&one);
    assert!(audio.len() > 50, "{} audio packets", audio.len());
    assert_eq!(audio_packets(&resumed), audio, "audio copied identically");
    assert_eq!(audio, audio_packets(&input), "audio is the source's");
    assert_eq!(
        framemd5(&resumed),
        framemd5(&one),
        "decoded frames identical"
    );
    assert_eq!(
        video_packets(&resumed),
        video_packets(&one),
        "video packets identical (each segment's encode is deterministic)"
    );
}

#[test]
fn seams_of_closed_gop_h264_with_b_frames_and_open_gop_hevc() {
    let dir = scratch();
    let d = dir.path();
    let h264 = scrolling_clip(
        d,
        "bframes.mp4",
        (64, 48),
        40,
        "yuv420p",
        &[
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-bf",
            "3",
            "-g",
            "5",
            "-keyint_min",
            "5",
            "-sc_threshold",
            "0",
            "-x264-params",
            "open_gop=0",
        ],
    );
    let hevc = scrolling_clip(
        d,
        "opengop.mkv",
        (64, 48),
        40,
        "yuv420p",
        &[
            "-c:v",
            "libx265",
            "-preset",
            "ultrafast",
            "-x265-params",
            "keyint=6:min-keyint=6:open-gop=1:bframes=3:scenecut=0:log-level=error",
        ],
    );
    // The fixtures are what they claim: B-frames reordered, and CRA keyframes with leading
    // pictures (a packet after a keyframe presented before it).
    let reordered = |p: &Path| {
        let pts: Vec<i64> = video_packets_flags(p).iter().map(|(t, _)| *t).collect();
        pts.windows(2).any(|w| w[1] < w[0])
    };
    assert!(reordered(&h264) && reordered(&hevc));
    let mut key = None;
    let leading = video_packets_flags(&hevc).into_iter().any(|(pts, is_key)| {
        if is_key {
            key = Some(pts);
        }
        key.is_some_and(|k| pts < k)
    });
    assert!(leading, "open GOP: leading pictures before a CRA");

    for input in [&h264, &hevc] {
        let output = d.join(format!(
            "{}.out.mp4",
            input.file_stem().unwrap().to_string_lossy()
        ));
        let v = upscale_ok(
            input,
            &output,
            &fixture("nearest_x2.onnx"),
            &["--segment-frames", "1"],
        );
        let (total, ..) = segment_counts(&v);
        let keyframes = video_packets_flags(input)
            .iter()
            .filter(|(_, key)| *key)
            .count();
        assert!(keyframes >= 7, "{keyframes} keyframes");
        assert_eq!(
            total as usize,
            keyframes,
            "{}: cut at every keyframe",
            input.display()
        );
        assert_eq!(v["frames_out"], 40);
        for count in ["decoder_errors", "frames_damaged", "frames_dropped"] {
            assert_eq!(
                v["input_damage"][count], 0,
                "{count}: {}",
                v["input_damage"]
            );
        }
        assert_seamless(input, &output, true);
        assert_frames_are_the_inputs(input, &output, 64, 48);
    }
}

#[test]
fn vfr_subtitles_attachments_and_chapters_survive_segmentation() {
    let dir = scratch();
    // A keyframe every 5 frames: segments on both sides of the frame rate change.
    let input = rich_mkv(
        dir.path(),
        &["-g", "5", "-keyint_min", "5", "-sc_threshold", "0"],
    );
    let output = dir.path().join("out.mkv");
    upscale_in_segments_of_5(&input, &output, &[]);
    assert_rich_mkv_streams_kept(&input, &output);
    assert_eq!(frame_times(&input).len(), 25);
    // Matroska stores no DTS.
    assert_seamless(&input, &output, false);
    assert_eq!(video_field(&output, "width"), "96");
}

#[test]
fn an_odd_sized_input_is_segmented_like_any_other() {
    let dir = scratch();
    let d = dir.path();
    // 63x35 (odd both ways; 4:4:4 so H.264 takes it); x2 is an even 126x70.
    let input = scrolling_clip(d, "odd.mkv", (63, 35), 30, "yuv444p", &X264_GOP_5);
    assert_eq!(video_field(&input, "width"), "63");
    let output = d.join("out.mp4");
    upscale_in_segments_of_5(&input, &output, &[]);
    assert_eq!(video_field(&output, "width"), "126");
    assert_eq!(video_field(&output, "height"), "70");
    assert_seamless(&input, &output, true);
    assert_frames_are_the_inputs(&input, &output, 63, 35);
}

#[test]
fn ten_bit_hevc_stays_ten_bit_with_its_colour_tags_across_segments() {
    let dir = scratch();
    let d = dir.path();
    let input = scrolling_clip(
        d,
        "main10.mkv",
        (64, 36),
        30,
        "yuv420p10le",
        &[
            "-c:v",
            "libx265",
            "-preset",
            "ultrafast",
            "-x265-params",
            "keyint=5:min-keyint=5:scenecut=0:log-level=error",
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "smpte2084",
            "-colorspace",
            "bt2020nc",
            "-color_range",
            "tv",
        ],
    );
    assert_eq!(video_field(&input, "profile"), "Main 10");
    let output = d.join("out.mkv");
    upscale_in_segments_of_5(
        &input,
        &output,
        &["--codec", "hevc", "--preset", "ultrafast"],
    );
    assert_eq!(video_field(&output, "codec_name"), "hevc");
    assert_eq!(video_field(&output, "profile"), "Main 10");
    assert_eq!(video_field(&output, "pix_fmt"), "yuv420p10le");
    for field in [
        "color_primaries",
        "color_transfer",
        "color_space",
        "color_range",
    ] {
        assert_eq!(
            video_field(&output, field),
            video_field(&input, field),
            "{field}"
        );
    }
    assert_seamless(&input, &output, false);
    assert_frames_are_the_inputs(&input, &output, 64, 36);
}

#[test]
fn a_changed_crf_refuses_the_resume_until_restart() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = slow_model();
    let output = d.join("out.mp4");
    let work = d.join(".out.mp4.rave-work");
    let opts = ["--segment-frames", "10", "--threads", "1"];
    // Ctrl+C: the segments done so far make a partial output; the work folder stays.
    let args = upscale_args(&input, &output, &model, &[CPU, &opts[..]].concat());
    let (o, done) = interrupt_after(&args, &work, 1, libc::SIGINT);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v = report(&o);
    assert_eq!(v["status"], "partial");
    assert_eq!(v["output"], d.join("out.partial.mp4").to_str().unwrap());
    assert!(done >= 1);
    let manifest = std::fs::read(work.join("manifest.json")).unwrap();

    let changed = [&opts[..], &["--crf", "30"]].concat();
    let o = upscale(&input, &output, &model, &[CPU, &changed].concat());
    assert_exit(&o, 2);
    let v = report(&o);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--crf was 18, now 30") && message.contains("--restart"),
        "{message}"
    );
    let o = upscale(
        &input,
        &output,
        &model,
        &[&["--device", "cpu"], &changed[..]].concat(),
    );
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--crf was 18, now 30"),
        "{}",
        stderr(&o)
    );
    assert!(!output.exists());
    assert_eq!(
        std::fs::read(work.join("manifest.json")).unwrap(),
        manifest,
        "the refused run leaves the job as it was"
    );
    assert_eq!(manifest_done(&work), Some((done, 4)));

    let restart = [&changed[..], &["--restart"]].concat();
    let v = upscale_ok(&input, &output, &model, &restart);
    assert_eq!(v["status"], "complete");
    assert_eq!(segment_counts(&v), (4, 4, 0, 1), "nothing reused");
    assert_eq!(v["encoder"]["crf"], 30);
    assert_eq!(frame_times(&output), frame_times(&input));
    assert!(!work.exists());
    // The partial the interrupted run kept holds frames of another encode: the job that
    // made it was discarded, and nothing calls it superseded.
    assert!(d.join("out.partial.mp4").exists());
    assert!(
        !v["mux"]["warnings"].to_string().contains("partial output"),
        "{v}"
    );
}

#[test]
fn two_jobs_give_the_frames_of_one() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 60);
    let model = fixture("nearest_x2.onnx");
    let mut md5 = Vec::new();
    // The third run: workers that wait for each other to load (a VRAM budget, here ignored
    // on the CPU) must still all start.
    for (run, jobs, budget) in [(0, "1", None), (1, "2", None), (2, "2", Some("4GiB"))] {
        let output = d.join(format!("jobs{jobs}-{run}.mp4"));
        let args = ["--segment-frames", "10", "--jobs", jobs];
        let v = match budget {
            None => upscale_ok(&input, &output, &model, &args),
            // --device auto, which falls back to the CPU here (the budget ignored, warned).
            Some(b) => {
                let extra = [&args[..], &["--vram-limit", b, "--json"]].concat();
                let o = upscale(&input, &output, &model, &extra);
                assert_exit(&o, 0);
                assert!(
                    stderr(&o).contains("--vram-limit ignored"),
                    "{}",
                    stderr(&o)
                );
                report(&o)
            }
        };
        let (total, processed, reused, ran) = segment_counts(&v);
        assert_eq!((total, processed, reused), (6, 6, 0));
        assert_eq!(ran.to_string(), jobs);
        assert_eq!(frame_entries(&output, "pts").len(), 60);
        assert_eq!(audio_packets(&output), audio_packets(&input));
        md5.push(framemd5(&output));
    }
    assert_eq!(md5[1], md5[0], "--jobs 2 decodes to the frames of --jobs 1");
    assert_eq!(md5[2], md5[0], "and with workers that load in turn");
}

/// MPEG-2 declares reordered frames unless its sequence says `low_delay`, which encoders
/// rarely set: an I/P-only stream's timestamps never go back, as if they were decode times.
/// Its packets show no B-picture, so it is cut like any other, frames in order.
#[test]
fn mpeg2_without_b_pictures_is_cut_into_segments() {
    let dir = scratch();
    let d = dir.path();
    for name in ["ip.mkv", "ip.mxf"] {
        let ip = ["-c:v", "mpeg2video", "-bf", "0", "-g", "6", "-q:v", "2"];
        let input = scrolling_clip(d, name, (64, 48), 30, "yuv420p", &ip);
        let output = d.join(format!("{name}.out.mkv"));
        let v = upscale_ok(
            &input,
            &output,
            &fixture("nearest_x2.onnx"),
            &["--segment-frames", "6"],
        );
        let (total, ..) = segment_counts(&v);
        assert!(total >= 4, "{name}: {total} segments: {}", v["segments"]);
        assert_seamless(&input, &output, false);
        assert_frames_are_the_inputs(&input, &output, 64, 48);
    }
}
