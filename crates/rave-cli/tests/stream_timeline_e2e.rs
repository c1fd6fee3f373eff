//! End-to-end output timeline: an input that starts late (or near the MPEG-TS clock wrap)
//! gives an output that starts at zero with its streams in step, and `--max-frames` cuts
//! chapters and subtitle cues with the picture.

mod common;

use std::path::Path;

use common::*;

/// Upscale with the nearest-neighbour x2 fixture model.
fn upscale_nearest(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    upscale(input, output, &fixture("nearest_x2.onnx"), extra)
}

/// `(format start, format duration, first video pts, first audio pts)` of `path`, seconds.
fn timeline(path: &Path) -> (f64, f64, f64, f64) {
    let get = |args: &[&str]| -> f64 {
        let out = ffprobe(path, args);
        out.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let first = |stream: &str| {
        packets(path, stream)
            .iter()
            .filter_map(|r| r.split(',').next()?.parse::<f64>().ok())
            .fold(f64::INFINITY, f64::min)
    };
    (
        get(&["-show_entries", "format=start_time", "-of", "csv=p=0"]),
        get(&["-show_entries", "format=duration", "-of", "csv=p=0"]),
        first("v:0"),
        first("a:0"),
    )
}

/// An input whose timeline starts an hour in (an MPEG-TS capture; a Matroska file cut from
/// one) gives an output that starts at zero, as `ffmpeg` makes it: not an MP4 that opens on
/// an hour of empty edit, nor a Matroska file that declares an hour's duration. Every
/// stream keeps its offset from the others, every frame and packet is there, and the
/// chapters move with the picture.
#[test]
fn an_input_that_starts_late_gives_an_output_that_starts_at_zero() {
    let dir = scratch();
    let d = dir.path();
    let ts = d.join("late.ts");
    lavfi_clip(
        &ts,
        &["testsrc2=size=48x32:rate=25:duration=1", "sine=duration=1"],
        &[
            "-c:v",
            "libx264",
            "-c:a",
            "mp2",
            "-output_ts_offset",
            "3600",
        ],
    );
    let meta = d.join("meta.txt");
    write_chapters(
        &meta,
        &[
            (3_600_000, 3_600_400, "Opening"),
            (3_600_400, 3_601_000, "Ending"),
        ],
    );
    let mkv = d.join("late.mkv");
    let m = meta.to_str().unwrap();
    lavfi_clip(
        &mkv,
        &["testsrc2=size=48x32:rate=25:duration=1", "sine=duration=1"],
        &[
            "-i",
            m,
            "-map",
            "0:v",
            "-map",
            "1:a",
            "-map_chapters",
            "2",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-output_ts_offset",
            "3600",
        ],
    );
    for (input, name) in [(&ts, "ts.mp4"), (&ts, "ts.mkv"), (&mkv, "mkv.mkv")] {
        let (in_start, _, in_video, in_audio) = timeline(input);
        assert!(in_start > 3599.0, "{in_start}");
        let out = d.join(name);
        let o = upscale_nearest(input, &out, &[]);
        assert_exit(&o, 0);
        let (start, duration, video, audio) = timeline(&out);
        assert!(start.abs() < 0.002, "{name}: starts at {start}");
        assert!(duration < 1.2, "{name}: lasts {duration} s");
        assert!(
            ((video - audio) - (in_video - in_audio)).abs() < 0.002,
            "{name}: video {video} audio {audio}, in the input {in_video} {in_audio}"
        );
        assert_eq!(frame_times(&out).len(), frame_times(input).len(), "{name}");
        assert_eq!(packet_count(&out, "a:0"), packet_count(input, "a:0"));
    }
    let moved = chapters(&d.join("mkv.mkv"));
    let shift = timeline(&mkv).0;
    assert!(
        moved.contains(&format!("start_time={:.6}", 3600.0 - shift))
            && moved.contains("title=Ending"),
        "{moved}"
    );

    // Chapters that end before the picture starts are left out, as ffmpeg leaves them, and
    // said (they went silently).
    let early = d.join("early.txt");
    write_chapters(&early, &[(0, 400, "Gone"), (3_600_000, 3_601_000, "Kept")]);
    let early_mkv = d.join("early.mkv");
    let e = early.to_str().unwrap();
    lavfi_clip(
        &early_mkv,
        &["testsrc2=size=48x32:rate=25:duration=1"],
        &[
            "-i",
            e,
            "-map",
            "0:v",
            "-map_chapters",
            "1",
            "-c:v",
            "libx264",
            "-output_ts_offset",
            "3600",
        ],
    );
    let out = d.join("early_out.mkv");
    let o = upscale_nearest(&early_mkv, &out, &["--json"]);
    assert_exit(&o, 0);
    let kept = chapters(&out);
    assert!(
        kept.contains("title=Kept") && !kept.contains("title=Gone"),
        "{kept}"
    );
    let v = json_report(&o);
    assert_eq!(v["mux"]["chapters_before_picture"], 1, "{v}");
    assert!(
        v["mux"]["warnings"]
            .to_string()
            .contains("1 chapter(s) end before the picture starts"),
        "{v}"
    );

    // An MPEG-TS whose 33-bit clock wraps 2.3 s in: FFmpeg reads its start as -2.3 s,
    // which Matroska cannot store and an MP4 would hide behind an edit list.
    let wrap = d.join("wrap.ts");
    offset_ts_clip(&wrap, "testsrc2=size=48x32:rate=25:duration=4", 4, "95440");
    let (in_start, ..) = timeline(&wrap);
    assert!(in_start < -2.0, "{in_start}");
    // One whose timestamps all lie before the wrap (FFmpeg reads them all as negative):
    // its segment file, an MP4, must not keep them (FFmpeg's MP4 muxer wrote its samples
    // with zero durations, and the join failed: exit 4).
    let before = d.join("before_wrap.ts");
    offset_ts_clip(
        &before,
        "testsrc2=size=48x32:rate=25:duration=2",
        2,
        "95438",
    );
    let (before_start, before_duration, ..) = timeline(&before);
    assert!(
        before_start < -3.0 && before_start + before_duration < 0.0,
        "{before_start} {before_duration}"
    );
    for (input, name) in [
        (&wrap, "wrap.mkv"),
        (&wrap, "wrap.mp4"),
        (&before, "before_wrap.mkv"),
        (&before, "before_wrap.mp4"),
    ] {
        let wrap = input;
        let out = d.join(name);
        assert_exit(&upscale_nearest(wrap, &out, &[]), 0);
        let (start, duration, ..) = timeline(&out);
        assert!(
            start.abs() < 0.002 && duration < 4.2,
            "{name}: {start} {duration}"
        );
        assert_eq!(frame_times(&out).len(), frame_times(wrap).len(), "{name}");
        assert_eq!(packet_count(&out, "a:0"), packet_count(wrap, "a:0"));
        let decoded = std::process::Command::new("ffmpeg")
            .args([
                "-v",
                "error",
                "-i",
                out.to_str().unwrap(),
                "-f",
                "null",
                "-",
            ])
            .output()
            .unwrap();
        assert!(
            decoded.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&decoded.stderr)
        );
    }
    // Segments cut across the wrap do not join (a seek lands on the wrong side of it): such
    // a file is one segment, and says why.
    let out = d.join("wrap_segments.mkv");
    let o = upscale_nearest(&wrap, &out, &["--segment-frames", "12", "--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["segments"]["total"], 1, "{v}");
    assert!(
        v["segments"]["single_reason"]
            .to_string()
            .contains("clock wraps"),
        "{v}"
    );
    assert_eq!(frame_times(&out).len(), frame_times(&wrap).len());
}

/// `--max-frames` (and Ctrl+C, which assembles the same way) ends the picture early: the
/// chapters after it are left out and the one it cuts ends with it, a subtitle cue running
/// past it ends there, and the file lasts as long as its picture (MP4 writes its chapters
/// as a text track, which otherwise held the whole input's duration).
#[test]
fn max_frames_cuts_chapters_and_subtitle_cues_with_the_picture() {
    let dir = scratch();
    let d = dir.path();
    let meta = d.join("meta.txt");
    write_chapters(
        &meta,
        &[(0, 1000, "One"), (1000, 3000, "Two"), (3000, 4000, "Three")],
    );
    let srt = d.join("cues.srt");
    std::fs::write(
        &srt,
        "1\n00:00:00,500 --> 00:00:02,500\nLong cue\n\n2\n00:00:03,000 --> 00:00:03,800\nLate cue\n",
    )
    .unwrap();
    let input = d.join("in.mkv");
    let (m, s) = (meta.to_str().unwrap(), srt.to_str().unwrap());
    lavfi_clip(
        &input,
        &["testsrc2=size=48x32:rate=25:duration=4", "sine=duration=4"],
        &[
            "-i",
            s,
            "-i",
            m,
            "-map",
            "0:v",
            "-map",
            "1:a",
            "-map",
            "2:s",
            "-map_chapters",
            "3",
            "-c:v",
            "libx264",
            "-g",
            "25",
            "-c:a",
            "libopus",
            "-c:s",
            "srt",
        ],
    );
    // MP4 cannot hold SubRip: its input is the same without the subtitles.
    let no_subs = d.join("in.mp4");
    let i = input.to_str().unwrap();
    ffmpeg(&[
        "-i",
        i,
        "-map",
        "0:v",
        "-map",
        "0:a",
        "-c",
        "copy",
        no_subs.to_str().unwrap(),
    ]);
    for (source, name) in [(&input, "cut.mkv"), (&no_subs, "cut.mp4")] {
        let out = d.join(name);
        assert_exit(&upscale_nearest(source, &out, &["--max-frames", "30"]), 0);
        assert_eq!(frame_times(&out).len(), 30, "{name}");
        // 30 frames at 25 fps: the picture ends 1.2 s after it starts.
        let video_start: f64 = video_field(&out, "start_time").parse().unwrap();
        let end = video_start + 1.2;
        let listed = chapters(&out);
        assert!(
            listed.contains("title=One") && listed.contains("title=Two"),
            "{name}: {listed}"
        );
        assert!(!listed.contains("title=Three"), "{name}: {listed}");
        assert!(
            listed.contains(&format!("end_time={end:.6}")),
            "{name}: the cut chapter should end at {end:.6}: {listed}"
        );
        let duration = format_duration(&out);
        assert!(duration < end + 0.05, "{name}: lasts {duration} s");
    }
    // Matroska keeps the subtitles: the long cue ends with the picture, the late one is gone.
    let mkv = d.join("cut.mkv");
    let end = video_field(&mkv, "start_time").parse::<f64>().unwrap() + 1.2;
    let cues = ffprobe(
        &mkv,
        &[
            "-select_streams",
            "s",
            "-show_entries",
            "packet=pts_time,duration_time",
            "-of",
            "csv=p=0",
        ],
    );
    let cues: Vec<(f64, f64)> = cues
        .lines()
        .map(|l| {
            let (p, dur) = l.split_once(',').unwrap();
            (p.parse().unwrap(), dur.parse().unwrap())
        })
        .collect();
    assert_eq!(cues.len(), 1, "{cues:?}");
    assert!(
        (cues[0].0 + cues[0].1 - end).abs() < 0.002,
        "{cues:?} against {end}"
    );
}

/// Subtitle cues that begin before the picture (a Matroska file whose subtitles start
/// earlier than its video and audio): the output starts with the picture, so a cue that
/// runs into it is shown from the start until its own end, not for its whole length (which
/// Matroska kept when it moved its start to zero), and one that ends before it is left
/// out, as chapters are; both are said.
#[test]
fn subtitle_cues_before_the_picture_keep_their_end_or_are_left_out() {
    let dir = scratch();
    let d = dir.path();
    let av = d.join("av.mkv");
    lavfi_clip(
        &av,
        &["testsrc2=size=48x32:rate=25:duration=3", "sine=duration=3"],
        &["-c:v", "libx264", "-c:a", "aac"],
    );
    let srt = d.join("subs.srt");
    std::fs::write(
        &srt,
        "1\n00:00:00,500 --> 00:00:01,000\nGone\n\n2\n00:00:01,500 --> 00:00:02,500\nStraddles\n\n3\n00:00:03,000 --> 00:00:03,500\nAfter\n",
    )
    .unwrap();
    let input = d.join("late_picture.mkv");
    ffmpeg(&[
        "-itsoffset",
        "2",
        "-i",
        av.to_str().unwrap(),
        "-i",
        srt.to_str().unwrap(),
        "-map",
        "0",
        "-map",
        "1",
        "-c",
        "copy",
        input.to_str().unwrap(),
    ]);
    let cues = |path: &Path| -> Vec<(f64, f64)> {
        packets(path, "s:0")
            .iter()
            .map(|r| {
                let f: Vec<f64> = r
                    .split(',')
                    .map(|x| x.parse().unwrap_or(f64::NAN))
                    .collect();
                (f[0], f[0] + f[2])
            })
            .collect()
    };
    let (_, _, in_video, _) = timeline(&input);
    let in_cues = cues(&input);
    assert_eq!(in_cues.len(), 3, "{in_cues:?}");
    let out = d.join("out.mkv");
    let o = upscale_nearest(&input, &out, &[]);
    assert_exit(&o, 0);
    let err = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        err.contains("1 subtitle cue(s) began before the picture"),
        "{err}"
    );
    assert!(
        err.contains("1 subtitle cue(s) ended before the picture"),
        "{err}"
    );
    let (_, _, video, _) = timeline(&out);
    let out_cues = cues(&out);
    assert_eq!(out_cues.len(), 2, "{out_cues:?}");
    // The straddling cue starts at zero and ends as far into the picture as it did.
    assert!(out_cues[0].0.abs() < 0.002, "{out_cues:?}");
    let ends_in = |cue: (f64, f64), video: f64| cue.1 - video;
    assert!(
        (ends_in(out_cues[0], video) - ends_in(in_cues[1], in_video)).abs() < 0.002,
        "{out_cues:?} video {video}; {in_cues:?} video {in_video}"
    );
    assert!(
        ((out_cues[1].0 - video) - (in_cues[2].0 - in_video)).abs() < 0.002,
        "{out_cues:?} {in_cues:?}"
    );
}
