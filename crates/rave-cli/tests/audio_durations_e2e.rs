//! Audio packets that come without a duration (ALAC in Matroska: no parser gives one) keep
//! every sample in MP4 and MOV, which end a track at its last packet's start plus its
//! duration: the last packet was written and then hidden, its samples never played (as by
//! FFmpeg's own stream copy).

mod common;

use std::path::Path;

use common::*;

/// The decoded samples of `path`'s first audio stream (16-bit mono), counted.
fn samples(path: &Path) -> usize {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-ac", "1", "-f", "s16le", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout.len() / 2
}

#[test]
fn alac_without_packet_durations_keeps_its_last_samples_in_mp4_and_mov() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    // 2.05 s at 44100 Hz: 22 packets of 4096 samples and a last one of 293.
    let input = d.join("in.mkv");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=64x48:rate=25:duration=2",
            "sine=frequency=440:sample_rate=44100:duration=2.05",
        ],
        &["-c:v", "libx264", "-c:a", "alac"],
    );
    let durations = ffprobe(
        &input,
        &[
            "-select_streams",
            "a",
            "-show_entries",
            "packet=duration",
            "-of",
            "csv=p=0",
        ],
    );
    assert!(
        durations.lines().all(|l| l.trim() == "N/A"),
        "the fixture's packets have no duration: {durations}"
    );
    let want = samples(&input);
    assert_eq!(want, 90405);
    for ext in ["mp4", "mov", "mkv"] {
        let out = d.join(format!("out.{ext}"));
        let o = upscale(&input, &out, &m, &[]);
        assert_exit(&o, 0);
        // Before: 90112 in MP4 and MOV, the last packet's 293 samples hidden.
        assert_eq!(samples(&out), want, "{ext}");
    }
}
