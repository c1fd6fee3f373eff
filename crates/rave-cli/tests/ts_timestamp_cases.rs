//! MPEG-TS timestamps damaged in one PES header (no CRC guards them): an audio PES holds a
//! dozen AAC frames, each timed from its header, so one flipped bit moves them all; a
//! B-frame's PES carries a PTS only, so its decode time moves with it. A transport stream
//! may restart its timestamps (a splice), and one stream's jump was taken for one: the
//! run finished "complete" with the picture and sound seconds out of place.

mod common;
mod corpus;

use common::*;

/// Four seconds of 96x64 H.264 with B-frames and 48 kHz AAC in MPEG-TS, in `dir`.
fn clean_ts(dir: &std::path::Path) -> std::path::PathBuf {
    let clean = dir.join("clean.ts");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=96x64:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &["-c:v", "libx264", "-bf", "3", "-g", "50", "-c:a", "aac"],
    );
    clean
}

/// One audio PES's PTS 2.9 s back or ahead (bit 18 of the 90 kHz clock), 47722 s ahead (bit
/// 32), or one video PES's 2.9 s: refused as damage, not spliced; with --allow-corrupt
/// every packet and frame back in its place.
#[test]
fn a_pes_timestamp_out_of_place_is_damage_put_back_not_a_splice() {
    let dir = scratch();
    let clean = clean_ts(dir.path());
    let data = std::fs::read(&clean).unwrap();
    let model = fixture("nearest_x2.onnx");
    let want = dir.path().join("clean-out.mkv");
    assert_exit(&upscale(&clean, &want, &model, &[]), 0);
    let audio = corpus::pes_starts(&data, |id| id & 0xE0 == 0xC0);
    let video = corpus::pes_starts(&data, |id| id == 0xE0);
    for (what, at, bit) in [
        ("audio PES 3", audio[3], 18),
        ("audio PES 5", audio[5], 18),
        ("audio PES 4", audio[4], 32),
        ("video PES 31", video[31], 18),
    ] {
        let damaged = dir.path().join("damaged.ts");
        std::fs::write(&damaged, corpus::with_pes_pts_bit_flipped(&data, at, bit)).unwrap();
        let out = dir.path().join("out.mkv");
        let o = upscale(&damaged, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("timestamp leaps") && !err.contains("restart"),
            "{what}: {err}"
        );

        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("restart"), "{what}: {}", stderr(&o));
        assert_same_audio(&out, &want, what);
        assert_eq!(frame_times(&out), frame_times(&want), "{what}");
    }
}
