//! End-to-end output contract beyond the picture: every other stream copied untouched,
//! chapters and metadata kept, variable frame rate kept, 10-bit and colour tags kept,
//! rotation kept, each encoder, and streams a container cannot hold refused up front.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A VFR H.264 MKV with Opus audio, SubRip subtitles, a font attachment, two chapters and
/// a title.
fn rich_mkv(dir: &Path) -> PathBuf {
    let subs = dir.join("subs.srt");
    std::fs::write(
        &subs,
        "1\n00:00:00,100 --> 00:00:00,500\nHello\n\n2\n00:00:00,600 --> 00:00:00,900\nWorld\n",
    )
    .unwrap();
    let meta = dir.join("meta.txt");
    std::fs::write(&meta, ";FFMETADATA1\ntitle=RAVE test clip\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=400\ntitle=Opening\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=400\nEND=1000\ntitle=Ending\n").unwrap();
    let font = dir.join("font.ttf");
    std::fs::write(&font, b"not really a font").unwrap();
    let out = dir.join("rich.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=48x32:rate=25:duration=1",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=300:duration=1",
        "-i",
        subs.to_str().unwrap(),
        "-i",
        meta.to_str().unwrap(),
        "-map",
        "0:v",
        "-map",
        "1:a",
        "-map",
        "2:s",
        "-map_metadata",
        "3",
        "-map_chapters",
        "3",
        // Frames 10.. come 70 ms apart instead of 40: variable frame rate.
        "-vf",
        "setpts='N*40/1000/TB+if(gte(N,10),(N-9)*30/1000/TB,0)'",
        "-vsync",
        "passthrough",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "libopus",
        "-c:s",
        "srt",
        "-attach",
        font.to_str().unwrap(),
        "-metadata:s:t",
        "mimetype=application/x-truetype-font",
        "-metadata:s:a",
        "language=eng",
        out.to_str().unwrap(),
    ]);
    out
}

fn streams(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-show_entries",
            "stream=codec_type,codec_name:stream_tags=language,filename,mimetype",
            "-of",
            "compact",
        ],
    )
}

fn chapters(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-show_entries",
            "chapter=start_time,end_time:chapter_tags=title:format_tags=title",
            "-of",
            "compact",
        ],
    )
}

/// Upscale with the nearest-neighbour x2 fixture model.
fn upscale_nearest(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    upscale(input, output, &fixture("nearest_x2.onnx"), extra)
}

#[test]
fn mkv_keeps_every_stream_chapters_metadata_and_variable_timestamps() {
    let dir = scratch();
    let input = rich_mkv(dir.path());
    let output = dir.path().join("out.mkv");
    let o = upscale_nearest(&input, &output, &[]);
    assert_exit(&o, 0);
    assert_eq!(streams(&output), streams(&input));
    assert!(streams(&output).contains("subrip") && streams(&output).contains("ttf"));
    assert_eq!(chapters(&output), chapters(&input));
    assert!(chapters(&output).contains("Opening") && chapters(&output).contains("RAVE test clip"));
    let times = frame_times(&input);
    assert_eq!(times.len(), 25);
    assert_eq!(
        frame_times(&output),
        times,
        "variable frame timestamps kept"
    );
    for select in ["a", "s", "t"] {
        assert_eq!(
            packets(&output, select),
            packets(&input, select),
            "stream {select} copied untouched"
        );
    }
    assert_eq!(video_field(&output, "width"), "96");
}

#[test]
fn mp4_output_refuses_streams_it_cannot_hold_before_any_work() {
    let dir = scratch();
    let input = rich_mkv(dir.path());
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

#[test]
fn ten_bit_bt2020_stays_ten_bit_with_its_colour_tags_in_hevc() {
    let dir = scratch();
    let input = dir.path().join("hdr.mkv");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=48x32:rate=25:duration=0.2",
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
        input.to_str().unwrap(),
    ]);
    let output = dir.path().join("out.mkv");
    let o = upscale_nearest(
        &input,
        &output,
        &["--codec", "hevc", "--preset", "ultrafast"],
    );
    assert_exit(&o, 0);
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
    let plain = make_clip(dir.path(), "plain.mp4", "48x32", 3);
    let input = dir.path().join("rotated.mp4");
    ffmpeg(&[
        "-i",
        plain.to_str().unwrap(),
        "-c",
        "copy",
        "-metadata:s:v",
        "rotate=90",
        input.to_str().unwrap(),
    ]);
    let rotation = |p: &Path| {
        ffprobe(
            p,
            &[
                "-select_streams",
                "v:0",
                "-show_entries",
                "stream_side_data=rotation",
                "-of",
                "csv=p=0",
            ],
        )
        .trim()
        .to_string()
    };
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
    assert_eq!(v["model"]["min_input_hw"], serde_json::json!([48, 64]));
    assert_eq!(video_field(&output, "width"), "128");
    assert_eq!(video_field(&output, "height"), "96");
}
