//! MPEG-TS captures joined (`cat capture1.ts capture2.ts`), each begun at any byte: the
//! second starts mid-GOP as the first does. Its packets before its first keyframe were fed
//! to the decoder, which decoded them from the first capture's pictures: decoder errors,
//! exit 3 ("Reference 5 >= 4"), and with --allow-corrupt two dozen concealed, garbled
//! frames in the output.

mod common;
mod corpus;

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
    let bytes = ts_recording(&dir.join(format!("whole-{name}")), video, codec, offset);
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
        ("hevc", HEVC_OPEN_GOP),
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

/// The transport stream `data` with the PTS and DTS of every PES from byte `from` on
/// moved by `ticks` of the 90 kHz clock (its counters going on: no seam in its bytes).
fn timestamps_moved_from(data: &[u8], from: usize, ticks: i64) -> Vec<u8> {
    let mut out = data.to_vec();
    let pes = corpus::pes_starts(data, |id| id == 0xE0 || id == 0xC0);
    for at in pes.into_iter().filter(|&at| at >= from) {
        out = corpus::with_pes_pts_moved(&out, at, ticks);
        if corpus::pes_pts(&out, at).1 {
            out = corpus::with_pes_dts_moved(&out, at, ticks);
        }
    }
    out
}

/// One coded stream whose timestamps restart in the middle of a GOP (a clock reset,
/// no seam in the bytes: its pictures go on referring to the ones before): no part
/// starts, every frame is decoded and kept, nothing is skipped.
#[test]
fn a_clock_restarting_inside_one_coded_stream_skips_nothing() {
    let dir = scratch();
    let clip = dir.path().join("clip.ts");
    let args = ["-c:v", "libx264", "-bf", "2", "-g", "50", "-c:a", "aac"];
    lavfi_clip(
        &clip,
        &["testsrc2=s=96x64:r=25:d=6", "sine=f=440:d=6"],
        &args,
    );
    let data = std::fs::read(&clip).unwrap();
    // The 70th picture's PES: 20 pictures into the second GOP.
    let video = corpus::pes_starts(&data, |id| id == 0xE0);
    let restarted = dir.path().join("restarted.ts");
    std::fs::write(
        &restarted,
        timestamps_moved_from(&data, video[70], -360_000),
    )
    .unwrap();
    let out = dir.path().join("restarted.mkv");
    let o = upscale(&restarted, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("timestamps restart 1 time"), "{err}");
    assert!(!err.contains("mid-GOP"), "{err}");
    let damage = &json_report(&o)["input_damage"];
    assert_eq!(
        damage["frames_before_part_keyframes"].as_u64(),
        Some(0),
        "{damage}"
    );
    assert_eq!(frame_times(&out).len(), 150);
}

/// A capture cut inside a picture's PES where the video's continuity counter happens to go
/// on from the part before's (one cut in sixteen): only the tables' and the sound's counters
/// break, a little after the picture's first PES. It is a part all the same: its pictures
/// before its first keyframe are skipped (they were decoded from the part before's
/// pictures, garbled, exit 0 with nothing said).
#[test]
fn a_capture_whose_video_counter_happens_to_go_on_is_still_a_part() {
    let dir = scratch();
    let args = ["-c:v", "libx264", "-g", "25", "-bf", "2", "-c:a", "aac"];
    let first = dir.path().join("a.ts");
    lavfi_clip(
        &first,
        &["testsrc2=s=160x90:r=25:d=4", "sine=f=440:d=4"],
        &args,
    );
    let whole = dir.path().join("whole-b.ts");
    lavfi_clip(
        &whole,
        &["mandelbrot=s=160x90:r=25", "sine=f=880:d=4"],
        &[&["-t", "4"], &args[..]].concat(),
    );
    let (a, b) = (
        std::fs::read(&first).unwrap(),
        std::fs::read(&whole).unwrap(),
    );
    let video =
        |p: &[u8]| (u16::from(p[1] & 0x1F) << 8 | u16::from(p[2])) == 0x100 && p[3] & 0x10 != 0;
    let last = a.chunks(188).rfind(|p| video(p)).unwrap()[3] & 0x0F;
    // The first transport packet of B's picture, no PES start, whose counter goes on.
    let cut = (1..b.len() / 188)
        .map(|k| k * 188)
        .find(|&at| {
            let p = &b[at..at + 188];
            video(p) && p[1] & 0x40 == 0 && p[3] & 0x0F == (last + 1) % 16
        })
        .unwrap();
    let second = dir.path().join("b.ts");
    std::fs::write(&second, &b[cut..]).unwrap();
    let model = fixture("nearest_x2.onnx");
    let alone = |input: &Path| {
        let out = input.with_extension("mkv");
        let o = upscale(input, &out, &model, &["--overwrite", "--json"]);
        assert_exit(&o, 0);
        let skipped = json_report(&o)["input_damage"]["frames_before_first_keyframe"].as_u64();
        (frame_times(&out).len(), skipped.unwrap())
    };
    let (a, b) = (alone(&first), alone(&second));
    let joined = dir.path().join("joined.ts");
    cat_files(&[&first, &second], &joined);
    let out = dir.path().join("joined.mkv");
    let o = upscale(&joined, &out, &model, &["--overwrite", "--json"]);
    assert_exit(&o, 0);
    let damage = &json_report(&o)["input_damage"];
    assert_eq!(
        damage["frames_before_part_keyframes"].as_u64(),
        Some(b.1),
        "{damage}"
    );
    assert_eq!(damage["frames_damaged"].as_u64(), Some(0), "{damage}");
    assert_eq!(frame_times(&out).len(), a.0 + b.0);
}
