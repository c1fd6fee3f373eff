//! End-to-end output contract beyond the picture: every other stream copied untouched,
//! chapters and metadata kept, variable frame rate kept, 10-bit and colour tags kept,
//! rotation kept, each encoder, and streams a container cannot hold refused up front.

mod common;

use std::path::Path;

use common::*;

/// Upscale with the nearest-neighbour x2 fixture model.
fn upscale_nearest(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    upscale(input, output, &fixture("nearest_x2.onnx"), extra)
}

#[test]
fn mkv_keeps_every_stream_chapters_metadata_and_variable_timestamps() {
    let dir = scratch();
    let input = rich_mkv(dir.path(), &[]);
    let output = dir.path().join("out.mkv");
    let o = upscale_nearest(&input, &output, &[]);
    assert_exit(&o, 0);
    assert_rich_mkv_streams_kept(&input, &output);
    let times = frame_times(&input);
    assert_eq!(times.len(), 25);
    assert_eq!(
        frame_times(&output),
        times,
        "variable frame timestamps kept"
    );
    assert_eq!(video_field(&output, "width"), "96");
}

/// A second video stream (another angle, a picture-in-picture) is copied at its own size:
/// RAVE upscales one video stream, and says so before the work and in the report.
#[test]
fn a_second_video_stream_is_copied_and_said_to_be_not_upscaled() {
    let dir = scratch();
    let input = dir.path().join("two_videos.mkv");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=96x64:rate=25:duration=0.4",
            "testsrc=size=48x32:rate=25:duration=0.4",
        ],
        &["-map", "0:v", "-map", "1:v", "-c:v", "libx264"],
    );
    let output = dir.path().join("out.mkv");
    let o = upscale_nearest(&input, &output, &["--json"]);
    assert_exit(&o, 0);
    let said = "stream #1 (video h264), 48x32, is copied as it is, not upscaled: RAVE upscales one video stream, #0";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        r["mux"]["warnings"].to_string().contains(said),
        "{}",
        r["mux"]
    );
    let sizes = ffprobe(
        &output,
        &[
            "-select_streams",
            "v",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0",
        ],
    );
    assert_eq!(
        sizes.split_whitespace().collect::<Vec<_>>(),
        ["192,128", "48,32"]
    );
}

#[test]
fn mp4_output_refuses_streams_it_cannot_hold_before_any_work() {
    let dir = scratch();
    let input = rich_mkv(dir.path(), &[]);
    let output = dir.path().join("out.mp4");
    let o = upscale_nearest(&input, &output, &[]);
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains("subrip") && err.contains("write to .mkv instead"),
        "{err}"
    );
    assert!(!output.exists());
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

/// The ADPCM, A-law and mu-law sound of older cameras' AVIs, which Matroska holds as
/// `A_MS/ACM` tracks though its muxer does not list them: copied packet for packet into
/// .mkv (it was refused, exit 4, as a stream no container RAVE writes could hold).
#[test]
fn mkv_holds_the_wave_audio_of_old_avis() {
    let dir = scratch();
    for codec in ["adpcm_ima_wav", "adpcm_ms", "pcm_alaw", "pcm_mulaw"] {
        let input = dir.path().join(format!("{codec}.avi"));
        lavfi_clip(
            &input,
            &["testsrc=s=96x64:r=10:d=2", "sine=f=440:r=22050:d=2"],
            &["-c:v", "mjpeg", "-c:a", codec],
        );
        let output = dir.path().join(format!("{codec}.mkv"));
        let o = upscale_nearest(&input, &output, &[]);
        assert_exit(&o, 0);
        let hashes = |p: &Path| {
            ffprobe(
                p,
                &[
                    "-select_streams",
                    "a",
                    "-show_packets",
                    "-show_data_hash",
                    "MD5",
                    "-show_entries",
                    "packet=data_hash",
                    "-of",
                    "csv=p=0",
                ],
            )
        };
        let want = hashes(&input);
        assert!(want.lines().count() > 10, "{codec}: {want}");
        assert_eq!(hashes(&output), want, "{codec}");
    }
}

/// Sound that starts after the frames written (`--max-frames 5`, sound from 1.5 s): .mp4
/// and .mov write no empty track, so it is said to be skipped (it was said copied, with 0
/// packets, and was not there); .mkv keeps the empty track.
#[test]
fn a_copied_stream_with_no_packet_is_said_skipped_where_mp4_drops_it() {
    let dir = scratch();
    let input = dir.path().join("late_sound.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=s=96x64:r=10:d=3",
        "-itsoffset",
        "1.5",
        "-f",
        "lavfi",
        "-i",
        "sine=f=440:r=48000:d=3",
        "-c:v",
        "libx264",
        "-c:a",
        "aac",
        input.to_str().unwrap(),
    ]);
    for (ext, kept) in [("mp4", false), ("mov", false), ("mkv", true)] {
        let output = dir.path().join(format!("out.{ext}"));
        let o = upscale_nearest(&input, &output, &["--max-frames", "5", "--json"]);
        let report = json_report(&o);
        let (copied, skipped) = (
            &report["mux"]["copied_streams"],
            &report["mux"]["skipped_streams"],
        );
        let tracks = ffprobe(
            &output,
            &[
                "-select_streams",
                "a",
                "-show_entries",
                "stream=index",
                "-of",
                "csv=p=0",
            ],
        );
        assert_eq!(tracks.trim().is_empty(), !kept, "{ext}: {tracks}");
        match kept {
            true => assert_eq!(copied, &serde_json::json!([1]), "{ext}: {report}"),
            false => {
                assert_eq!(copied, &serde_json::json!([]), "{ext}: {report}");
                let said = skipped[0].as_str().unwrap_or_default();
                assert!(
                    said.starts_with("input stream #1: no packet"),
                    "{ext}: {said}"
                );
            }
        }
    }
}

#[test]
fn ten_bit_bt2020_stays_ten_bit_with_its_colour_tags_in_hevc() {
    let dir = scratch();
    let input = dir.path().join("hdr.mkv");
    lavfi_clip(
        &input,
        &["testsrc2=size=48x32:rate=25:duration=0.2"],
        &[
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p10le",
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
    // The default codec keeps the depth as H.264 High 10, which most hardware players
    // cannot play: said, with the codec that keeps it where they can.
    let h264 = dir.path().join("h264.mkv");
    let o = upscale_nearest(&input, &h264, &["--preset", "ultrafast"]);
    assert_exit(&o, 0);
    assert_eq!(video_field(&h264, "profile"), "High 10");
    let note = "the output is H.264 High 10 (the input is 10-bit): mpv, VLC and ffmpeg play it, most TVs, phones and browsers do not; --codec hevc keeps the depth in a form they play";
    assert_eq!(stderr(&o).matches(note).count(), 1, "{}", stderr(&o));
    // Said before the frames (as the model loads), where it can still change the user's
    // mind, not only once the run is over.
    let o = upscale_nearest(
        &input,
        &dir.path().join("h264-2.mkv"),
        &["--preset", "ultrafast", "--progress", "jsonl"],
    );
    assert_exit(&o, 0);
    let events = stderr(&o);
    let said = events.lines().position(|l| l.contains(note));
    let first_frames = events
        .lines()
        .position(|l| l.contains("\"event\":\"progress\"") && !l.contains("\"frames_done\":0,"));
    assert!(said.is_some() && said < first_frames, "{events}");
    assert_eq!(events.matches(note).count(), 1, "{events}");
    let output = dir.path().join("out.mkv");
    let o = upscale_nearest(
        &input,
        &output,
        &["--codec", "hevc", "--preset", "ultrafast"],
    );
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("High 10"), "{}", stderr(&o));
    assert_eq!(video_field(&output, "codec_name"), "hevc");
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
    assert_eq!(frame_times(&output), frame_times(&input));
}

#[test]
fn rotation_is_kept() {
    let dir = scratch();
    let input = rotated_clip(dir.path());
    let rotated = rotation(&input);
    assert!(
        rotated == "90" || rotated == "-90",
        "fixture rotation {rotated:?}"
    );
    let output = dir.path().join("out.mp4");
    assert_exit(&upscale_nearest(&input, &output, &[]), 0);
    assert_eq!(rotation(&output), rotated);
    let o = run(&["probe", output.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["video"]["rotation_deg"].as_f64().unwrap().abs(), 90.0);
}

#[test]
fn av1_encoder_and_mov_container() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "64x48", 3);
    let output = dir.path().join("out.mkv");
    assert_exit(
        &upscale_nearest(
            &input,
            &output,
            &["--codec", "av1", "--preset", "12", "--crf", "40"],
        ),
        0,
    );
    assert_eq!(video_field(&output, "codec_name"), "av1");
    assert_eq!(frame_times(&output), frame_times(&input));
    let mov = dir.path().join("out.mov");
    assert_exit(
        &upscale_nearest(&input, &mov, &["--preset", "ultrafast"]),
        0,
    );
    assert_eq!(packets(&mov, "a"), packets(&input, "a"));
}

#[test]
fn fixed_shape_model_scale_comes_from_its_static_shapes() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "64x48", 3);
    let output = dir.path().join("out.mkv");
    let m = fixture("fixed_64x48_x2.onnx");
    let o = upscale(&input, &output, &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["model"]["scale"], 2);
    // Sizes are [width, height] throughout the report.
    assert_eq!(v["model"]["min_input_size"], serde_json::json!([64, 48]));
    assert_eq!(v["model"]["max_input_size"], serde_json::json!([64, 48]));
    assert_eq!(v["input_size"], serde_json::json!([64, 48]));
    // A dynamic model: any size up, so no largest side.
    let o = upscale(
        &input,
        &output,
        &fixture("nearest_x2.onnx"),
        &["--json", "--overwrite"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["model"]["min_input_size"], serde_json::json!([1, 1]));
    assert_eq!(
        v["model"]["max_input_size"],
        serde_json::json!([null, null])
    );
    assert_eq!(video_field(&output, "width"), "128");
    assert_eq!(video_field(&output, "height"), "96");
}

/// A one-second MKV in `dir` with three AAC tracks, tagged by `metadata` (ffmpeg's
/// `-metadata:s:a:N key=value` pairs).
fn three_tagged_tracks(dir: &Path, metadata: &[&str]) -> std::path::PathBuf {
    let input = dir.join("langs.mkv");
    let mut args = vec![
        "-map", "0", "-map", "1", "-map", "2", "-map", "3", "-c:v", "libx264", "-c:a", "aac",
    ];
    args.extend_from_slice(metadata);
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=64x48:rate=25:duration=1",
            "sine=duration=1",
            "sine=frequency=600:duration=1",
            "sine=frequency=800:duration=1",
        ],
        &args,
    );
    input
}

/// The language tags of `path`'s audio tracks, one per line.
fn languages(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-select_streams",
            "a",
            "-show_entries",
            "stream_tags=language",
            "-of",
            "csv=p=0",
        ],
    )
}

/// QuickTime names languages by the classic Macintosh list, which spells some of them by
/// the other ISO 639-2 code ("ger", not "deu"); FFmpeg's mov muxer left any other code
/// unset without a word. Such a language goes into a .mov under QuickTime's name, and one
/// QuickTime cannot name at all is said (an .mp4 keeps every code as it is).
#[test]
fn mov_keeps_languages_under_quicktimes_names_and_says_what_it_cannot_name() {
    let dir = scratch();
    let input = three_tagged_tracks(
        dir.path(),
        &[
            "-metadata:s:a:0",
            "language=deu",
            "-metadata:s:a:1",
            "language=fre",
            "-metadata:s:a:2",
            "language=hrv",
            "-metadata:s:a:0",
            "title=Commentary",
        ],
    );
    let mov = dir.path().join("out.mov");
    let o = upscale_nearest(&input, &mov, &["--json"]);
    assert_exit(&o, 0);
    // The third is left unset: an empty line.
    assert_eq!(languages(&mov), "ger\nfra\n\n");
    let warnings = json_report(&o)["mux"]["warnings"].to_string();
    let said = "stream #3: its language 'hrv' has no QuickTime code";
    assert!(warnings.contains(said), "{warnings}");
    // Said on stderr too, like every warning (it was only in the report and the summary).
    let err = stderr(&o);
    assert_eq!(err.matches(said).count(), 1, "{err}");
    // A title is written (as the track's `udta/name`, which FFmpeg's own reader does not
    // read back): nothing to say.
    assert!(!warnings.contains("title"), "{warnings}");
    let mp4 = dir.path().join("out.mp4");
    assert_exit(&upscale_nearest(&input, &mp4, &[]), 0);
    assert_eq!(languages(&mp4), "deu\nfre\nhrv\n");
}

/// Two-letter codes ("en", "pt-BR", as `-metadata:s:a language=en` sets them) go into .mp4
/// and .mov as their three-letter codes (FFmpeg left them unset without a word), and a
/// value that is no language code is said; .mkv keeps each as it is.
#[test]
fn two_letter_languages_are_written_as_three_letters_in_mp4_and_mov() {
    let dir = scratch();
    let input = three_tagged_tracks(
        dir.path(),
        &[
            "-metadata:s:a:0",
            "language=en",
            "-metadata:s:a:1",
            "language=pt-BR",
            "-metadata:s:a:2",
            "language=english",
        ],
    );
    for (ext, want) in [("mp4", "eng\npor\n"), ("mov", "eng\npor\n")] {
        let output = dir.path().join(format!("out.{ext}"));
        let o = upscale_nearest(&input, &output, &[]);
        assert_exit(&o, 0);
        assert!(
            languages(&output).starts_with(want),
            "{ext}: {}",
            languages(&output)
        );
        let err = stderr(&o);
        let said =
            format!("its language 'english' is no ISO 639 code, so the .{ext} leaves it unset");
        assert!(err.contains(&said), "{ext}: {err}");
    }
}
