//! MPEG-TS captures joined (`cat capture1.ts capture2.ts`), each begun at any byte: the
//! second starts mid-GOP as the first does. Its packets before its first keyframe were fed
//! to the decoder, which decoded them from the first capture's pictures: decoder errors,
//! exit 3 ("Reference 5 >= 4"), and with --allow-corrupt two dozen concealed, garbled
//! frames in the output.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A 6-s capture of `video` (a lavfi source) with a tone, coded by `codec`, its clock at
/// `offset` seconds, cut at the transport packet `percent` % into the file (mid-GOP).
fn capture(
    dir: &Path,
    name: &str,
    video: &str,
    codec: &[&str],
    offset: &str,
    percent: usize,
) -> PathBuf {
    let whole = dir.join(format!("whole-{name}"));
    let mut args = vec!["-t", "6"];
    args.extend_from_slice(codec);
    args.extend(["-c:a", "mp2", "-output_ts_offset", offset]);
    let source = format!("{video}=size=160x90:rate=25");
    lavfi_clip(
        &whole,
        &[&source, "sine=frequency=440:sample_rate=48000"],
        &args,
    );
    let bytes = std::fs::read(&whole).unwrap();
    let cut = bytes.len() / 188 * percent / 100 * 188;
    let path = dir.join(name);
    std::fs::write(&path, &bytes[cut..]).unwrap();
    path
}

/// Two captures each begun mid-GOP, joined, in H.264 with B-frames (closed GOPs), MPEG-2
/// (open GOPs) and HEVC (open GOPs, CRA pictures): exit 0 without --allow-corrupt, every
/// frame each capture gives alone (the picture skipped before the second's first keyframe,
/// and said), every audio packet, nothing damaged.
#[test]
fn captures_joined_each_begun_mid_gop_are_upscaled_whole() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    let codecs: [(&str, &[&str]); 3] = [
        ("h264", &["-c:v", "libx264", "-bf", "2", "-g", "50"]),
        ("mpeg2", &["-c:v", "mpeg2video", "-bf", "2", "-g", "24"]),
        (
            "hevc",
            &[
                "-c:v",
                "libx265",
                "-x265-params",
                "log-level=error:keyint=48",
                "-bf",
                "3",
            ],
        ),
    ];
    for (what, codec) in codecs {
        let first = capture(dir.path(), "a.ts", "testsrc2", codec, "100", 33);
        let second = capture(dir.path(), "b.ts", "mandelbrot", codec, "5000", 37);
        let alone = |input: &Path| {
            let out = input.with_extension("mkv");
            let o = upscale(input, &out, &model, &["--overwrite", "--json"]);
            assert_exit(&o, 0);
            let skipped = json_report(&o)["input_damage"]["frames_before_first_keyframe"].as_u64();
            (
                frame_times(&out).len(),
                packet_count(&out, "a:0"),
                skipped.unwrap(),
            )
        };
        let (a, b) = (alone(&first), alone(&second));
        assert!(b.2 > 0, "{what}: the second capture starts on a keyframe");
        let joined = dir.path().join("joined.ts");
        cat_files(&[&first, &second], &joined);
        let out = dir.path().join("joined.mkv");
        let o = upscale(&joined, &out, &model, &["--overwrite", "--json"]);
        assert_exit(&o, 0);
        assert!(
            stderr(&o).contains("parts joined in the input start mid-GOP"),
            "{what}: {}",
            stderr(&o)
        );
        let damage = &json_report(&o)["input_damage"];
        assert_eq!(
            damage["frames_before_first_keyframe"].as_u64(),
            Some(a.2),
            "{what}"
        );
        assert_eq!(
            damage["frames_before_part_keyframes"].as_u64(),
            Some(b.2),
            "{what}"
        );
        assert_eq!(
            damage["frames_damaged"].as_u64(),
            Some(0),
            "{what}: {damage}"
        );
        assert_eq!(frame_times(&out).len(), a.0 + b.0, "{what}");
        assert_eq!(packet_count(&out, "a:0"), a.1 + b.1, "{what}");
    }
}
