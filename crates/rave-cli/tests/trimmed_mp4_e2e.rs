//! An MP4 cut with stream copy (`ffmpeg -ss 1.4 -i long.mp4 -c copy`) still holds the audio
//! from the keyframe before the cut, hidden by its edit list. An MP4 output gets an edit
//! list of its own; Matroska has none, so those packets are left out there (but the one
//! before the start, the decoder's pre-roll). Before: 0.5 s of audio the cut removed played
//! before the picture in the `.mkv`.

mod common;

use std::path::Path;

use common::*;

/// Seconds of audio `path` decodes to (48 kHz mono s16).
fn audio_seconds(path: &Path) -> f64 {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map", "0:a", "-ac", "1", "-ar", "48000", "-f", "s16le", "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout.len() as f64 / 2.0 / 48000.0
}

fn start_time(path: &Path) -> f64 {
    ffprobe(
        path,
        &["-show_entries", "format=start_time", "-of", "csv=p=0"],
    )
    .trim()
    .parse()
    .unwrap()
}

#[test]
fn audio_an_mp4_edit_list_hides_stays_hidden_in_matroska() {
    let dir = scratch();
    let d = dir.path();
    let long = make_clip(d, "long.mp4", "48x32", 75);
    let trimmed = d.join("trimmed.mp4");
    let (l, t) = (long.to_str().unwrap(), trimmed.to_str().unwrap());
    ffmpeg(&["-ss", "1.4", "-i", l, "-c", "copy", t]);
    let want = audio_seconds(&trimmed);
    let model = fixture("nearest_x2.onnx");

    let mkv = d.join("out.mkv");
    let o = upscale(&trimmed, &mkv, &model, &["--json"]);
    assert_exit(&o, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        report["mux"]["hidden_packets"].as_u64().unwrap() > 5,
        "{report}"
    );
    let got = audio_seconds(&mkv);
    // At most the pre-roll packet (1024 samples) and the part of the first packet the edit
    // list cuts more (under two AAC packets, 43 ms), never the 0.4 s before the cut.
    assert!(
        got >= want && got - want < 0.043,
        "{got} s of audio against {want} s"
    );
    assert!(start_time(&mkv) > -0.05, "starts at {}", start_time(&mkv));

    let mp4 = d.join("out.mp4");
    assert_exit(&upscale(&trimmed, &mp4, &model, &[]), 0);
    assert!((audio_seconds(&mp4) - want).abs() < 0.001);
}
