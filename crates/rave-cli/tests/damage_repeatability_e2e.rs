//! A damaged input upscaled with --allow-corrupt twice gives the same pictures and the same
//! counts: the decoder's frame threads concealed damage differently from run to run (19,
//! 20, 17, 11, 20 frames damaged in five runs of one file, and other pixels each time), so
//! a damaged input, or any run with --allow-corrupt (the plan's read does not decode the
//! video, so damage inside it shows only as the run decodes), decodes with slice threads
//! only. The clip has no sound: its damage is in the video alone.

mod common;

use common::*;

/// Flip `count` bits of `data` from byte `from` on, chosen by a fixed linear congruential
/// sequence (the same file on every machine).
fn flip_bits(data: &mut [u8], from: usize, count: usize) {
    let mut state: u64 = 1002;
    for _ in 0..count {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = from + (state >> 33) as usize % (data.len() - from);
        data[at] ^= 1 << ((state >> 20) % 8);
    }
}

#[test]
fn a_damaged_input_gives_the_same_pictures_and_counts_every_run() {
    let dir = scratch();
    let clean = dir.path().join("clean.mp4");
    lavfi_clip(
        &clean,
        &["testsrc2=size=160x96:rate=25:duration=3"],
        &[
            "-c:v", "libx264", "-g", "25", "-bf", "2", "-pix_fmt", "yuv420p",
        ],
    );
    let mut data = std::fs::read(&clean).unwrap();
    // Damage the media data only (its sample tables are at the end). Decoded with frame
    // threads by FFmpeg, these 16 flips gave four different pictures in four runs.
    let mdat = data
        .windows(4)
        .position(|w| w == b"mdat")
        .expect("the media data");
    flip_bits(&mut data, mdat + 4096, 16);
    let damaged = dir.path().join("damaged.mp4");
    std::fs::write(&damaged, &data).unwrap();

    let mut runs = Vec::new();
    for run in 0..3 {
        let out = dir.path().join(format!("run{run}.mkv"));
        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--allow-corrupt", "--crf", "0", "--json"],
        );
        assert_exit(&o, 0);
        let damage = json_report(&o)["input_damage"].clone();
        assert!(
            damage["decoder_errors"].as_u64().unwrap() > 0,
            "the damage reaches the decoder: {damage}"
        );
        runs.push((damage, framemd5_of(&out)));
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
}

/// The MD5 of every decoded frame of `path`'s video.
fn framemd5_of(path: &std::path::Path) -> String {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-map", "0:v", "-f", "framemd5", "-"])
        .output()
        .expect("ffmpeg");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit(',').next().unwrap_or("").trim().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}
