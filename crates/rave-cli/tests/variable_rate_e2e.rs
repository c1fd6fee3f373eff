//! Variable frame rates. Matroska claims a constant frame rate for any video (FFmpeg reads
//! its default duration as the rate): a variable-rate recording is told apart by spacings
//! off the frame grid, and its long spacings are not said to be missing frames. An MP4 or
//! MOV with B-frames and a variable rate has packets without durations: its last frame
//! still lasts a frame, and the file is not short of one. An MPEG-TS paused for a second
//! or more has B-frames shown that long before the frame decoded just before them: that is
//! no restart of its timestamps. Frames and audio keep their times; two frames closer than
//! the output's time base tells apart are both kept, the second a tick later.

mod common;

use common::*;

/// A 30 fps clip (H.264 with B-frames, AAC), timestamps in milliseconds, whose frames are
/// placed by the setpts expression `times` (in seconds, of the frame number N).
fn timed_clip(path: &std::path::Path, times: &str) {
    lavfi_clip(
        path,
        &[
            "testsrc2=size=96x64:rate=30:duration=3",
            "sine=sample_rate=48000:duration=3",
        ],
        &[
            "-vf",
            &format!("settb=1/1000,setpts='({times})/TB'"),
            "-fps_mode",
            "passthrough",
            "-enc_time_base",
            "1:1000",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
}

#[test]
fn a_variable_rate_matroska_is_not_said_to_miss_frames() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    // A second at 24 fps, then 30 fps with a 0.4 s pause: the container says 30 fps.
    let vfr = d.join("vfr.mkv");
    timed_clip(&vfr, "if(lt(N,24),N/24,1+(N-24)/30+0.4*gte(N,50))");
    assert_eq!(video_field(&vfr, "r_frame_rate"), "30/1");
    let out = d.join("vfr_out.mkv");
    let o = upscale(&vfr, &out, &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 0, "{v}");
    assert!(!stderr(&o).contains("frame slot"), "{}", stderr(&o));
    assert_eq!(frame_times(&out), frame_times(&vfr));

    // The same pause in a clip that is 30 fps throughout is twelve frames the recorder
    // dropped (or lost): said, as before.
    let paused = d.join("paused.mkv");
    timed_clip(&paused, "N/30+0.4*gte(N,50)");
    let o = upscale(&paused, &d.join("paused_out.mkv"), &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 12, "{v}");
    // In the middle, not among the last frames.
    assert_eq!(v["input_damage"]["gap_among_last_frames"], false, "{v}");
    assert!(
        stderr(&o).contains("12 missing frame slots"),
        "{}",
        stderr(&o)
    );

    // At 29.97 fps a 10.01 s pause is 300 missing frames of 33.37 ms (303 were counted in
    // frames of 33 ms, the step truncated to the millisecond).
    let long = d.join("long_pause.mkv");
    lavfi_clip(
        &long,
        &["testsrc2=size=96x64:rate=30000/1001:duration=2"],
        &[
            "-vf",
            "settb=1/1000,setpts='(N*1001/30000+10.01*gte(N,30))/TB'",
            "-fps_mode",
            "passthrough",
            "-enc_time_base",
            "1:1000",
            "-c:v",
            "libx264",
        ],
    );
    let o = upscale(&long, &d.join("long_out.mkv"), &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 300, "{v}");
}

#[test]
fn a_variable_rate_mp4_or_mov_with_b_frames_is_whole() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    for (name, times) in [
        ("jitter.mp4", "N/30+0.012*mod(N,3)"),
        ("retimed.mov", "N*0.05"),
        ("two_rates.mp4", "if(lt(N,24),N/24,1+(N-24)/30)"),
    ] {
        let input = d.join(name);
        timed_clip(&input, times);
        let out = d.join(format!("out_{name}.mkv"));
        let o = upscale(&input, &out, &m, &["--json"]);
        assert_exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["input_damage"]["frames_missing"], 0, "{name}: {v}");
        assert_eq!(frame_times(&out), frame_times(&input), "{name}");
        assert_eq!(
            v["frames_out"].as_u64(),
            Some(frame_times(&input).len() as u64)
        );
    }
}

/// The last frame of a variable-rate video lasts as long as in the input: muxers gave it
/// the nominal rate's frame (a third of it here, where the video slows from 30 to 10 fps
/// for its last second: the video ended 59 ms early), with one segment or several, with
/// B-frames (the frame shown last is not the one decoded last) or without, in MP4 and
/// Matroska. What players take for the end: the container's duration.
#[test]
fn the_last_frame_of_a_variable_rate_mp4_keeps_its_length() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let parts: Vec<_> = [("fast.mp4", 30, 2), ("slow.mp4", 10, 1)]
        .into_iter()
        .map(|(name, rate, seconds)| {
            let part = d.join(name);
            lavfi_clip(
                &part,
                &[&format!(
                    "testsrc2=size=96x64:rate={rate}:duration={seconds}"
                )],
                &["-c:v", "libx264", "-video_track_timescale", "90000"],
            );
            part
        })
        .collect();
    let input = d.join("slows_down.mp4");
    concat_copy(&[&parts[0], &parts[1]], &input);
    assert!(
        (format_duration(&input) - 3.0).abs() < 0.002,
        "{}",
        format_duration(&input)
    );
    for (name, extra) in [
        ("one.mp4", &[][..]),
        ("segments.mp4", &["--segment-frames", "20"][..]),
        ("no_b_frames.mp4", &["--preset", "ultrafast"][..]),
        ("one.mkv", &[][..]),
        ("segments.mkv", &["--segment-frames", "20"][..]),
    ] {
        let out = d.join(name);
        assert_exit(&upscale(&input, &out, &m, extra), 0);
        // Matroska keeps milliseconds.
        match name.ends_with(".mp4") {
            true => assert_eq!(frame_times(&out), frame_times(&input), "{name}"),
            false => assert_eq!(frame_times(&out).len(), frame_times(&input).len()),
        }
        assert!(
            (format_duration(&out) - format_duration(&input)).abs() < 0.002,
            "{name}: the video lasts {} s, in the input {} s",
            format_duration(&out),
            format_duration(&input)
        );
    }
}

/// Presentation times (seconds) of the packets of `select` ("v", "a"), in order.
fn packet_times(path: &std::path::Path, select: &str) -> Vec<f64> {
    sorted_packet_times(path, select, &[])
}

#[test]
fn a_transport_stream_paused_with_b_frames_keeps_its_timeline_and_audio() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("paused.ts");
    // A 1.04 s pause after frame 24, the sound going on.
    timed_clip(&input, "N/30+1.04*gte(N,25)");
    let out = d.join("paused.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("restart"), "{}", stderr(&o));
    let start = |p: &std::path::Path| packet_times(p, "v")[0].min(packet_times(p, "a")[0]);
    let (t_in, t_out) = (start(&input), start(&out));
    for select in ["v", "a"] {
        let (a, b) = (packet_times(&input, select), packet_times(&out, select));
        assert_eq!(a.len(), b.len(), "{select}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                ((x - t_in) - (y - t_out)).abs() < 0.002,
                "{select}: {x} in the input is {y} in the output"
            );
        }
    }
}

#[test]
fn frames_closer_than_matroska_tells_apart_are_all_kept() {
    let dir = scratch();
    let d = dir.path();
    // A jittered 29.97 fps transport stream: ffmpeg's rounding leaves pairs of frames
    // 11 µs apart (one 90 kHz tick), which Matroska's milliseconds cannot tell apart.
    let input = d.join("jitter.ts");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=96x64:rate=30000/1001:duration=3",
            "sine=sample_rate=48000:duration=3",
        ],
        &[
            "-vf",
            "settb=1/90000,setpts='(N*1001/30000+0.011*mod(N,3))/TB'",
            "-fps_mode",
            "passthrough",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
    let out = d.join("jitter.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let frames = frame_times(&input).len();
    assert_eq!(v["frames_out"].as_u64(), Some(frames as u64), "{v}");
    assert_eq!(frame_times(&out).len(), frames);
    assert!(
        v["mux"]["warnings"]
            .to_string()
            .contains("went one tick later, so every frame is kept"),
        "{v}"
    );
}

/// A clean Matroska file whose video, one frame every 3 s with B-frames, starts 10 s after
/// its sound: FFmpeg gives its first B-frame packets no decode time, and a P-frame's
/// presentation time, 9 s after the frame before it in decode order, read as a timestamp
/// leaping ahead that the next packet came back from: the clean file was refused as
/// damaged. Video packets are judged by their decode times only.
#[test]
fn a_slow_b_frame_video_starting_after_its_sound_is_no_timestamp_leap() {
    let dir = scratch();
    // Made as MP4 and copied into Matroska, as a remux does: FFmpeg then reads the first
    // packets without decode times.
    let made = dir.path().join("slow.mp4");
    let input = dir.path().join("slow.mkv");
    lavfi_clip(
        &made,
        &[
            "testsrc2=size=64x48:rate=1/3:duration=60",
            "sine=duration=70",
        ],
        &[
            "-vf",
            "setpts=PTS+10/TB",
            "-c:v",
            "libx264",
            "-bf",
            "2",
            "-b_strategy",
            "0",
            "-c:a",
            "aac",
        ],
    );
    ffmpeg(&[
        "-i",
        made.to_str().unwrap(),
        "-c",
        "copy",
        input.to_str().unwrap(),
    ]);
    let o = upscale(
        &input,
        &dir.path().join("out.mkv"),
        &fixture("nearest_x2.onnx"),
        &["--json"],
    );
    assert_exit(&o, 0);
    let v = json_report(&o);
    assert_eq!(v["frames_out"], 20, "{v}");
}
