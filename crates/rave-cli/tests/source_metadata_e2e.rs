//! What the output keeps of how the input's picture is meant to be shown, where the input
//! says it outside the codec's own headers or only inside its bitstream: a pixel aspect
//! ratio only the container carries (VP9 in WebM, a Matroska display size; AV1 output, a
//! copied second video stream), HDR10 metadata only the HEVC bitstream carries (x265's
//! SEI), and an alpha channel RAVE cannot keep, which is said.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn nearest(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    upscale(input, output, &fixture("nearest_x2.onnx"), extra)
}

/// `name` in `dir`: 25 frames of testsrc2 at 96x64, made with the output options `args`.
fn clip(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    lavfi_clip(&path, &["testsrc2=size=96x64:rate=25:duration=1"], args);
    path
}

fn aspect(path: &Path) -> String {
    video_field(path, "sample_aspect_ratio") + " " + &video_field(path, "display_aspect_ratio")
}

#[test]
fn a_pixel_aspect_ratio_only_the_container_carries_is_kept() {
    let dir = scratch();
    let d = dir.path();
    let g5 = ["-g", "5", "-keyint_min", "5"];
    let vp9 = clip(
        d,
        "vp9.webm",
        &[
            &[
                "-vf",
                "setsar=4/3",
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
            ],
            &g5[..],
        ]
        .concat(),
    );
    let h264 = clip(
        d,
        "h264.mp4",
        &[
            &[
                "-vf",
                "setsar=4/3",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
            ],
            &g5[..],
        ]
        .concat(),
    );
    // A Matroska display size over the bitstream's 4:3.
    let anamorphic = d.join("anamorphic.mkv");
    let (h, a) = (h264.to_str().unwrap(), anamorphic.to_str().unwrap());
    ffmpeg(&["-i", h, "-c", "copy", "-aspect", "16:9", a]);
    assert_eq!(aspect(&vp9), "4:3 2:1");
    assert_eq!(aspect(&anamorphic), "32:27 16:9");
    // AV1 has no place for the ratio in its bitstream: only the output's container keeps it.
    let av1 = ["--codec", "av1", "--preset", "12"];
    for input in [&vp9, &anamorphic] {
        for (name, extra) in [
            ("out.mp4", &[][..]),
            ("seg.mkv", &["--segment-frames", "5"][..]),
            ("av1.mp4", &av1[..]),
            ("av1.mkv", &av1[..]),
        ] {
            let output = d.join(name);
            let o = nearest(input, &output, &[extra, &["--overwrite"]].concat());
            assert_exit(&o, 0);
            assert_eq!(aspect(&output), aspect(input), "{input:?} -> {name}");
        }
    }
}

#[test]
fn a_copied_second_video_stream_keeps_its_container_pixel_aspect_ratio() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("two.mkv");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=96x64:rate=25:duration=1",
            "testsrc=size=64x48:rate=25:duration=1",
        ],
        &[
            "-map",
            "0",
            "-map",
            "1",
            "-c:v:0",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:v:1",
            "libvpx-vp9",
            "-deadline",
            "realtime",
            "-filter:v:1",
            "setsar=44/45",
        ],
    );
    let second = |path: &Path| {
        ffprobe(
            path,
            &[
                "-select_streams",
                "v:1",
                "-show_entries",
                "stream=sample_aspect_ratio",
                "-of",
                "csv=p=0",
            ],
        )
        .trim()
        .to_owned()
    };
    assert_eq!(second(&input), "44:45");
    let output = d.join("out.mkv");
    let o = nearest(&input, &output, &[]);
    assert_exit(&o, 0);
    assert_eq!(second(&output), "44:45");
}

#[test]
fn hdr10_metadata_only_the_hevc_bitstream_carries_is_kept() {
    let dir = scratch();
    let d = dir.path();
    let x265 = "log-level=none:keyint=5:min-keyint=5:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400";
    let input = clip(
        d,
        "hdr10.mp4",
        &[
            "-pix_fmt",
            "yuv420p10le",
            "-c:v",
            "libx265",
            "-x265-params",
            x265,
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "smpte2084",
            "-colorspace",
            "bt2020nc",
        ],
    );
    let stream = format!("stream_side_data={HDR10_FIELDS}");
    let frame = format!("frame_side_data={HDR10_FIELDS}");
    assert!(
        hdr_side_data(&input, &stream).is_empty(),
        "the container has none"
    );
    let want = hdr_side_data(&input, &frame);
    assert_eq!(want.len(), 12, "the bitstream carries HDR10: {want:?}");
    for (name, codec, extra) in [
        ("hevc.mkv", "hevc", &[][..]),
        ("hevc.mp4", "hevc", &["--segment-frames", "5"][..]),
        ("h264.mov", "h264", &[][..]),
    ] {
        let output = d.join(name);
        let o = nearest(
            &input,
            &output,
            &[extra, &["--codec", codec, "--preset", "ultrafast"]].concat(),
        );
        assert_exit(&o, 0);
        assert_same_hdr(
            &hdr_side_data(&output, &stream),
            &want,
            &format!("{name}: container"),
        );
        if codec == "hevc" {
            let got = hdr_side_data(&output, &frame);
            assert_same_hdr(&got, &want, &format!("{name}: bitstream"));
        }
    }
}

#[test]
fn an_alpha_channel_is_said_to_be_dropped() {
    let dir = scratch();
    let d = dir.path();
    let qtrle = clip(
        d,
        "qtrle.mov",
        &[
            "-vf",
            "format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='X*2'",
            "-c:v",
            "qtrle",
        ],
    );
    let prores = clip(
        d,
        "prores.mov",
        &[
            "-vf",
            "format=yuva444p10le",
            "-c:v",
            "prores_ks",
            "-profile:v",
            "4444",
        ],
    );
    let vp9 = clip(
        d,
        "vp9.webm",
        &[
            "-vf",
            "format=yuva420p",
            "-c:v",
            "libvpx-vp9",
            "-deadline",
            "realtime",
        ],
    );
    let opaque = clip(d, "opaque.mov", &["-c:v", "prores_ks", "-profile:v", "3"]);
    // Palette PNGs and GIFs: every entry or pixel has room for alpha; only transparent
    // pixels count.
    let palette = clip(d, "palette.mkv", &["-vf", "format=pal8", "-c:v", "png"]);
    let gif = clip(d, "opaque.gif", &[]);
    let half_clear = "[0]format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='if(lt(X,48),0,255)',split[a][b];[a]palettegen=reserve_transparent=1[p];[b][p]paletteuse=alpha_threshold=128";
    let see_through = clip(
        d,
        "see_through.mkv",
        &["-filter_complex", half_clear, "-c:v", "png"],
    );
    let see_through_gif = clip(d, "see_through.gif", &["-filter_complex", half_clear]);
    for (input, what) in [
        (&qtrle, Some("(argb)")),
        (&prores, Some("(yuva444p")),
        (&vp9, Some("(WebM alpha_mode)")),
        (&opaque, None),
        (&palette, None),
        (&gif, None),
        (
            &see_through_gif,
            Some("(bgra, with transparent pixels in its first frame)"),
        ),
        (
            &see_through,
            Some("(pal8, with transparent pixels in its first frame)"),
        ),
    ] {
        let output = d.join("out.mkv");
        let o = nearest(input, &output, &["--overwrite", "--json"]);
        assert_exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let said: Vec<&str> = v["mux"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str().filter(|w| w.contains("alpha channel")))
            .collect();
        match what {
            Some(what) => assert!(
                said.len() == 1
                    && said[0].contains(what)
                    && said[0].contains("without transparency"),
                "{input:?}: {said:?}"
            ),
            None => assert!(said.is_empty(), "{input:?}: {said:?}"),
        }
    }
}

#[test]
fn timecode_and_chapter_tracks_are_said_to_be_written_again_not_lost() {
    let dir = scratch();
    let d = dir.path();
    let timed = clip(
        d,
        "tc.mov",
        &["-c:v", "libx264", "-timecode", "01:02:03:04"],
    );
    let chapters = d.join("chapters.txt");
    write_chapters(&chapters, &[(0, 500, "A"), (500, 1000, "B")]);
    let input = d.join("both.mov");
    let (t, c) = (timed.to_str().unwrap(), chapters.to_str().unwrap());
    let args = [
        "-i",
        t,
        "-i",
        c,
        "-map",
        "0",
        "-map_chapters",
        "1",
        "-c",
        "copy",
    ];
    ffmpeg(&[&args[..], &[input.to_str().unwrap()]].concat());
    let output = d.join("out.mov");
    let o = nearest(&input, &output, &[]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("the timecode track; its timecode is kept with the video stream")
            && text
                .contains("the chapter track; the chapters are written in the output's own form")
            && !text.contains("data streams are not copied"),
        "{text}"
    );
    let kept = ffprobe(
        &output,
        &["-show_entries", "stream_tags=timecode", "-of", "csv=p=0"],
    );
    assert!(kept.contains("01:02:03:04"), "{kept}");
    assert_eq!(chapter_ends(&output), ["0.500000", "1.000000"]);
}

#[test]
fn a_song_with_cover_art_is_refused_as_only_cover_art() {
    let dir = scratch();
    let song = dir.path().join("song.mp3");
    let (sound, picture) = ("sine=duration=1", "testsrc2=size=64x64:duration=0.04");
    let cover = [
        "-map",
        "0",
        "-map",
        "1",
        "-c:a",
        "libmp3lame",
        "-c:v",
        "mjpeg",
    ];
    let attached = ["-disposition:v", "attached_pic", "-frames:v", "1"];
    lavfi_clip(
        &song,
        &[sound, picture],
        &[&cover[..], &attached[..]].concat(),
    );
    let o = nearest(&song, &dir.path().join("out.mkv"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("has no video stream, only cover art") && err.contains("cover art mjpeg"),
        "{err}"
    );
}

/// A data stream (here telemetry tagged as a GoPro's `gpmd`) is not copied: once only the
/// summary's "skipped" line said so; now a warning on stderr and in `mux.warnings` names
/// it, and its ffmpeg command muxes it back in from the input.
#[test]
fn a_data_stream_left_out_is_warned_about_with_the_command_that_keeps_it() {
    let dir = scratch();
    let d = dir.path();
    let base = make_clip(d, "base.mp4", "48x32", 3);
    let blob = d.join("blob.bin");
    std::fs::write(&blob, vec![7u8; 2000]).unwrap();
    let input = d.join("telemetry.mov");
    ffmpeg(&[
        "-i",
        base.to_str().unwrap(),
        "-f",
        "data",
        "-i",
        blob.to_str().unwrap(),
        "-map",
        "0",
        "-map",
        "1",
        "-c",
        "copy",
        "-tag:d",
        "gpmd",
        input.to_str().unwrap(),
    ]);
    let output = d.join("out.mp4");
    let o = nearest(&input, &output, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let warnings = v["mux"]["warnings"].to_string();
    let index = 2;
    let said = format!("stream #{index} (data bin_data) 'gpmd' is left out of the output");
    assert!(warnings.contains(&said), "{warnings}");
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    // The command it gives works, in the output's own container (an MP4's Opus or cover
    // art would not go into a .mov).
    let kept = d.join("KEPT.mp4");
    assert!(
        warnings.contains(&format!("-map 0 -map 1:{index} -c copy KEPT.mp4")),
        "{warnings}"
    );
    mux_copy(&output, &input, &format!("1:{index}"), &[], &kept);
    let tags = ffprobe(
        &kept,
        &["-show_entries", "stream=codec_tag_string", "-of", "csv=p=0"],
    );
    assert!(tags.contains("gpmd"), "{tags}");
    // Matroska holds none: it says to write .mp4 or .mov first.
    let o = nearest(&input, &d.join("out.mkv"), &[]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("Matroska holds no data stream: to keep it, write .mp4 or .mov"),
        "{}",
        stderr(&o)
    );
}

/// A phone's QuickTime keys (location, make, model, creation date: what photo libraries
/// place and date a clip by) are kept in `.mov` and `.mp4` as the `mdta` keys they came as
/// (FFmpeg's default writes only the tags it knows: they were lost), a common tag also
/// under its QuickTime name (in that form FFmpeg writes no `©nam`), and the output's own
/// file-type brands are not hidden by the source's.
#[test]
fn an_iphones_quicktime_keys_are_kept_in_mov_and_mp4() {
    let dir = scratch();
    let d = dir.path();
    let base = make_clip(d, "base.mp4", "48x32", 3);
    let input = d.join("phone.mov");
    let keys = [
        ("com.apple.quicktime.make", "Apple"),
        ("com.apple.quicktime.model", "iPhone 14"),
        (
            "com.apple.quicktime.location.ISO6709",
            "+48.8583+002.2945+035.000/",
        ),
        (
            "com.apple.quicktime.creationdate",
            "2023-06-01T14:34:56+0200",
        ),
    ];
    let mut args = vec!["-i".to_string(), base.display().to_string()];
    args.extend(["-c", "copy", "-movflags", "use_metadata_tags"].map(String::from));
    for (k, v) in keys {
        args.extend(["-metadata".to_string(), format!("{k}={v}")]);
    }
    args.extend(["-metadata", "title=My Title"].map(String::from));
    args.push(input.display().to_string());
    ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
    for (name, brand) in [("out.mov", "qt  "), ("out.mp4", "isom")] {
        let output = d.join(name);
        assert_exit(&nearest(&input, &output, &[]), 0);
        let tags = ffprobe(&output, &["-show_entries", "format_tags", "-of", "json"]);
        let tags: serde_json::Value = serde_json::from_str(&tags).unwrap();
        let tags = &tags["format"]["tags"];
        for (k, v) in keys {
            assert_eq!(tags[k], v, "{name}: {k} in {tags}");
        }
        assert_eq!(tags["major_brand"], brand, "{name}: {tags}");
        // As `mdta` keys FFmpeg writes no ©nam: the title also goes under its QuickTime
        // name, which Apple's players read.
        assert_eq!(tags["title"], "My Title", "{name}: {tags}");
        assert_eq!(
            tags["com.apple.quicktime.title"], "My Title",
            "{name}: {tags}"
        );
        assert!(tags["RAVE_SOURCE"].is_string(), "{name}: {tags}");
    }
}
