//! Clean inputs of the kinds users actually have must never be refused as damaged: files
//! whose timestamps start after zero, FLV (whose muxer shifts everything past zero, and
//! which declares one duration for the whole file), audio ending or starting apart from the
//! video, MP4 cut with `ffmpeg -ss ... -c copy` (an edit list whose first packets are only
//! decoded to rebuild the picture, then discarded), a stream-copy remux into AVI, an MP4
//! whose chapter list runs past the media's end. Each one is upscaled completely: every
//! frame and every audio packet of the source is in the output (but those an MP4 edit list
//! hides before the start, which a Matroska output leaves out).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Frames and audio packets of `path`, as ffprobe counts them, less the audio packets an
/// MP4 edit list hides before the start (flagged discarded: `D`) but the last, the
/// decoder's pre-roll: a Matroska output, which has no edit list, leaves those out.
fn counts(path: &Path) -> (usize, usize) {
    let frames = frame_times(path).len();
    let audio = ffprobe(
        path,
        &[
            "-select_streams",
            "a:0",
            "-show_entries",
            "packet=pts_time,duration_time,flags",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .filter(|l| {
        let f: Vec<&str> = l.split(',').collect();
        let (pts, dur) = (f[0].parse::<f64>(), f[1].parse::<f64>());
        let hidden = f.get(2).is_some_and(|flags| flags.contains('D'));
        !matches!((hidden, pts, dur), (true, Ok(p), Ok(d)) if p + 2.0 * d <= 1e-6)
    })
    .count();
    (frames, audio)
}

/// `rave upscale` of `input` into `.mkv` must succeed with every frame and audio packet.
fn assert_complete(input: &Path) {
    let output = PathBuf::from(format!("{}.out.mkv", input.display()));
    let o = upscale(
        input,
        &output,
        &fixture("nearest_x2.onnx"),
        &["--device", "cpu"],
    );
    assert_exit(&o, 0);
    assert_eq!(
        counts(&output),
        counts(input),
        "{}: frames and audio packets",
        input.display()
    );
}

/// A 2 s clip with B-frames and AAC, made with `extra` output options into `name`.
fn clip(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    clip_of(dir, name, 2.0, &[], 2.0, extra)
}

/// `video_s` of video and `audio_s` of audio (with `audio_in` input options, such as an
/// offset) with B-frames and AAC, made with `extra` output options into `name`.
fn clip_of(
    dir: &Path,
    name: &str,
    video_s: f64,
    audio_in: &[&str],
    audio_s: f64,
    extra: &[&str],
) -> PathBuf {
    let path = dir.join(name);
    let video = format!("testsrc2=size=64x48:rate=25:duration={video_s}");
    let audio = format!("sine=frequency=440:sample_rate=48000:duration={audio_s}");
    let mut args = vec!["-f", "lavfi", "-i", &video];
    args.extend_from_slice(audio_in);
    args.extend_from_slice(&[
        "-f", "lavfi", "-i", &audio, "-c:v", "libx264", "-bf", "2", "-g", "10", "-c:a", "aac",
    ]);
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
    path
}

#[test]
fn clips_whose_timestamps_start_after_zero_are_complete() {
    let dir = scratch();
    for name in ["offset.mkv", "offset.mp4", "offset.mov", "offset.flv"] {
        let input = clip(dir.path(), name, &["-output_ts_offset", "1.5"]);
        assert_complete(&input);
    }
}

#[test]
fn a_plain_flv_is_complete() {
    let dir = scratch();
    assert_complete(&clip(dir.path(), "plain.flv", &[]));
}

#[test]
fn audio_that_ends_or_starts_apart_from_the_video_is_not_missing() {
    let dir = scratch();
    for ext in ["flv", "mkv", "mp4"] {
        let d = dir.path();
        assert_complete(&clip_of(
            d,
            &format!("short-audio.{ext}"),
            2.0,
            &[],
            1.0,
            &[],
        ));
        let late = ["-itsoffset", "0.5"];
        assert_complete(&clip_of(
            d,
            &format!("late-audio.{ext}"),
            2.0,
            &late,
            1.0,
            &[],
        ));
        assert_complete(&clip_of(
            d,
            &format!("short-video.{ext}"),
            0.5,
            &[],
            2.0,
            &[],
        ));
    }
}

#[test]
fn a_stream_copy_remux_into_avi_is_complete() {
    let dir = scratch();
    let source = clip(dir.path(), "source.mp4", &[]);
    let avi = dir.path().join("remux.avi");
    ffmpeg(&[
        "-i",
        source.to_str().unwrap(),
        "-c",
        "copy",
        avi.to_str().unwrap(),
    ]);
    assert_complete(&avi);
}

#[test]
fn an_mp4_cut_with_stream_copy_is_complete() {
    let dir = scratch();
    let source = clip(dir.path(), "source.mp4", &[]);
    let cut = dir.path().join("cut.mp4");
    ffmpeg(&[
        "-ss",
        "0.5",
        "-i",
        source.to_str().unwrap(),
        "-c",
        "copy",
        cut.to_str().unwrap(),
    ]);
    assert_complete(&cut);

    // Cut after the input is opened, with a length: the AAC track then starts at 0.02 s
    // and its duration is where it ends, not how long it lasts.
    let trimmed = dir.path().join("trimmed.mp4");
    ffmpeg(&[
        "-i",
        source.to_str().unwrap(),
        "-ss",
        "0.3",
        "-t",
        "1.0",
        "-c",
        "copy",
        trimmed.to_str().unwrap(),
    ]);
    assert_complete(&trimmed);
}

#[test]
fn a_concatenation_into_matroska_is_complete_in_matroska_and_mp4() {
    let dir = scratch();
    let source = clip(dir.path(), "source.mp4", &[]);
    // The join puts two AAC packets on the same millisecond: not damage.
    let joined = dir.path().join("joined.mkv");
    concat_copy(&[&source, &source], &joined);
    assert_complete(&joined);
    // MP4 needs strictly increasing timestamps: the second packet moves by one tick.
    let mp4 = dir.path().join("joined.out.mp4");
    let o = upscale(
        &joined,
        &mp4,
        &fixture("nearest_x2.onnx"),
        &["--device", "cpu"],
    );
    assert_exit(&o, 0);
    assert_eq!(counts(&mp4), counts(&joined));
}

/// An ASF holds decode times only: a B-frame stream's pictures are shown up to its
/// reordering after the last decode time, where the file's declared length ends; the video
/// starts at its first decode time, not at the file's start, which is the sound's where
/// that starts a second later. Complete, the sound as far after the picture as in the
/// input. (The last two frames' place was counted "at least 2 video frames missing", exit
/// 3, on a clean file; a second of picture before the sound went to negative times, which
/// Matroska cannot hold and an MP4's edit list hid.)
#[test]
fn an_asf_with_b_frames_is_complete() {
    let dir = scratch();
    let mp3 = ["-c:a", "libmp3lame"];
    let input = clip_of(dir.path(), "clip.asf", 4.0, &[], 4.0, &mp3);
    assert_complete(&input);
    let late = ["-itsoffset", "1"];
    let input = clip_of(dir.path(), "late.asf", 4.0, &late, 3.0, &mp3);
    assert_complete(&input);
    let output = PathBuf::from(format!("{}.out.mkv", input.display()));
    let (video, audio) = (
        sorted_packet_times(&output, "v:0", &[]),
        sorted_packet_times(&output, "a:0", &[]),
    );
    // The first picture is shown two frames after it is decoded (the B-frame delay).
    assert!((video[0] - 0.08).abs() < 0.001, "{video:?}");
    let sound = sorted_packet_times(&input, "a:0", &[])[0];
    assert!((audio[0] - sound).abs() < 0.001, "{sound}: {audio:?}");
}

#[test]
fn an_input_in_a_container_without_checks_is_upscaled_with_a_warning() {
    let dir = scratch();
    let vob = dir.path().join("clip.vob");
    lavfi_clip(
        &vob,
        &["testsrc2=size=64x48:rate=25:duration=0.4"],
        &["-c:v", "mpeg2video", "-f", "vob"],
    );
    let out = dir.path().join("out.mkv");
    let o = upscale(&vob, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains(
            "rave: warning: the input's container (mpeg) has no structure or length RAVE can check"
        ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["mux"]["warnings"].to_string().contains("(mpeg)"), "{v}");
}

/// An MP4's chapter text track sets the file's declared length: chapters that run past the
/// media (as a list written for a longer cut does) make the file declare more than its
/// picture and sound hold, which is no damage. Its chapters are kept.
#[test]
fn an_mp4_whose_chapters_run_past_its_end_is_complete() {
    let dir = scratch();
    let d = dir.path();
    let media = clip(d, "media.mp4", &[]);
    let chapters = d.join("chapters.txt");
    write_chapters(&chapters, &[(0, 1000, "A"), (1000, 5000, "B")]);
    let input = d.join("chapters.mp4");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (m, c, i) = (path(&media), path(&chapters), path(&input));
    ffmpeg(&[
        "-i",
        &m,
        "-i",
        &c,
        "-map",
        "0",
        "-map_chapters",
        "1",
        "-c",
        "copy",
        &i,
    ]);
    let declared = ffprobe(
        &input,
        &["-show_entries", "format=duration", "-of", "csv=p=0"],
    );
    assert_eq!(
        declared.trim(),
        "5.000000",
        "the chapters set the file's length"
    );
    assert_complete(&input);
    let output = PathBuf::from(format!("{}.out.mkv", input.display()));
    assert_eq!(chapter_ends(&output), ["1.000000", "5.000000"]);
}

/// `--max-frames` ending inside a group of B-frames: the reading has met the P-frame they
/// precede (decode order) but not them, which is no gap in the timeline.
#[test]
fn max_frames_inside_a_b_frame_group_sees_no_missing_frame_slots() {
    let dir = scratch();
    // x264's defaults: three B-frames in a pyramid.
    let input = dir.path().join("b.mp4");
    lavfi_clip(
        &input,
        &["testsrc2=size=64x48:rate=24:duration=1"],
        &["-c:v", "libx264"],
    );
    for n in ["2", "3", "4", "8"] {
        let output = dir.path().join(format!("first{n}.mkv"));
        let o = upscale(
            &input,
            &output,
            &fixture("nearest_x2.onnx"),
            &["--device", "cpu", "--max-frames", n],
        );
        assert_exit(&o, 0);
        assert!(
            !stderr(&o).contains("missing frame slot"),
            "{n}: {}",
            stderr(&o)
        );
        assert_eq!(frame_times(&output).len().to_string(), n);
    }
}

/// A file named like a timestamp (`2024-01-01T10:30:00.mp4`) or `file:x.mp4`, given as a
/// bare name: FFmpeg read the part before the colon as a protocol, refusing the first as
/// "not a media file" and upscaling another file, `x.mp4`, for the second (exit 0).
#[test]
fn names_with_a_colon_are_the_files_they_name() {
    let dir = scratch();
    let d = dir.path();
    let clip = make_clip(d, "clip.mp4", "48x32", 10);
    let decoy = make_clip(d, "x.mp4", "64x48", 5);
    assert!(decoy.exists());
    for name in ["2024-01-01T10:30:00.mp4", "file:x.mp4"] {
        std::fs::copy(&clip, d.join(name)).unwrap();
        let out = format!("out-{}.mkv", name.replace(':', "-"));
        let o = rave()
            .current_dir(d)
            .args(["upscale", "-i", name, "-o", &out, "-m"])
            .arg(fixture("nearest_x2.onnx"))
            .output()
            .unwrap();
        assert_exit(&o, 0);
        let output = d.join(&out);
        assert_eq!(video_field(&output, "width"), "96", "{name}");
        assert_eq!(frame_times(&output).len(), 10, "{name}");
    }
}

/// Y4M (raw pictures behind a text header): a whole file upscales without the warning of an
/// unchecked container, in 4:2:0, 4:2:2 10-bit and grey; one cut inside its last picture
/// (FFmpeg drops that frame without a word) is refused as truncated (exit 3).
#[test]
fn y4m_files_are_checked_for_whole_frames() {
    let dir = scratch();
    let m = fixture("nearest_x2.onnx");
    let out = dir.path().join("out.mkv");
    for pix_fmt in ["yuv420p", "yuv422p10le", "gray"] {
        let y4m = dir.path().join(format!("{pix_fmt}.y4m"));
        lavfi_clip(
            &y4m,
            &["testsrc2=size=64x48:rate=25:duration=0.4"],
            &["-pix_fmt", pix_fmt, "-strict", "-1"],
        );
        let o = upscale(&y4m, &out, &m, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(
            !stderr(&o).contains("no structure or length"),
            "{}",
            stderr(&o)
        );
        if pix_fmt == "yuv420p" {
            let bytes = std::fs::read(&y4m).unwrap();
            let cut = dir.path().join("cut.y4m");
            std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
            let o = upscale(&cut, &out, &m, &["--overwrite"]);
            assert_exit(&o, 3);
            assert!(
                stderr(&o).contains("the file is truncated: frame 9 at byte"),
                "{}",
                stderr(&o)
            );
        }
    }
}
