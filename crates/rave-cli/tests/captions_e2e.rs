//! Closed captions carried inside the video (CEA-608 as ATSC A/53 user data, as in US TV
//! and DVD captures) come out with the same frames in H.264 output, across segments; where
//! the encoder cannot write them (libx265, SVT-AV1 in this FFmpeg) a warning says so. Before:
//! dropped without a word.

mod common;

use std::path::Path;

use common::*;

/// The six caption bytes (two CEA-608 byte pairs) of frame `n`: letters of a message.
fn caption_of(n: usize) -> [u8; 6] {
    let text = b"HELLO WORLD ";
    let parity = |c: u8| {
        c | if c.count_ones().is_multiple_of(2) {
            0x80
        } else {
            0
        }
    };
    let (a, b) = (text[(2 * n) % text.len()], text[(2 * n + 1) % text.len()]);
    [0xfc, parity(a), parity(b), 0xfd, 0x80, 0x80]
}

/// An SEI NAL unit holding `cc` as A/53 user data (registered ITU-T T.35, "GA94").
fn caption_sei(cc: &[u8; 6]) -> Vec<u8> {
    let mut payload = vec![0xb5, 0x00, 0x31];
    payload.extend_from_slice(b"GA94");
    payload.extend_from_slice(&[0x03, 0x42, 0xff]);
    payload.extend_from_slice(cc);
    payload.push(0xff);
    let mut nal = vec![0, 0, 0, 1, 0x06, 0x04, payload.len() as u8];
    nal.extend_from_slice(&payload);
    nal.push(0x80);
    nal
}

/// Start offsets of the NAL units (after their 00 00 01 start code) of an Annex B stream.
fn nal_starts(stream: &[u8]) -> Vec<usize> {
    (0..stream.len().saturating_sub(3))
        .filter(|&i| stream[i..i + 3] == [0, 0, 1])
        .map(|i| i + 3)
        .collect()
}

/// `plain` (Annex B H.264, no B-frames) with frame n's captions before its slice.
fn with_captions(plain: &[u8]) -> Vec<u8> {
    let starts = nal_starts(plain);
    let mut out = Vec::new();
    let mut frame = 0;
    for (k, &at) in starts.iter().enumerate() {
        // The unit runs from its start code (3 or 4 bytes) to the next one's.
        let begin = if at >= 4 && plain[at - 4] == 0 {
            at - 4
        } else {
            at - 3
        };
        let end = starts.get(k + 1).map_or(plain.len(), |&n| {
            if n >= 4 && plain[n - 4] == 0 {
                n - 4
            } else {
                n - 3
            }
        });
        if matches!(plain[at] & 0x1f, 1 | 5) {
            out.extend_from_slice(&caption_sei(&caption_of(frame)));
            frame += 1;
        }
        out.extend_from_slice(&plain[begin..end]);
    }
    out
}

/// The A/53 caption bytes of each frame of `path`'s H.264 video, in decode order.
fn captions_in(path: &Path) -> Vec<Vec<u8>> {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:v",
            "-c",
            "copy",
            "-bsf:v",
            "h264_mp4toannexb",
            "-f",
            "h264",
            "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = o.stdout;
    (0..s.len().saturating_sub(4))
        .filter(|&i| &s[i..i + 4] == b"GA94" && s.get(i + 4) == Some(&0x03))
        .map(|i| {
            let count = usize::from(s[i + 5] & 0x1f);
            s[i + 7..i + 7 + 3 * count].to_vec()
        })
        .collect()
}

#[test]
fn closed_captions_stay_with_their_frames_in_h264_and_are_warned_about_elsewhere() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain.h264");
    lavfi_clip(
        &plain,
        &["testsrc2=size=48x32:rate=30000/1001:duration=0.8"],
        &["-c:v", "libx264", "-bf", "0", "-g", "8", "-f", "h264"],
    );
    let captioned = d.join("cc.h264");
    std::fs::write(&captioned, with_captions(&std::fs::read(&plain).unwrap())).unwrap();
    let input = d.join("cc.mp4");
    let (c, i) = (captioned.to_str().unwrap(), input.to_str().unwrap());
    ffmpeg(&["-r", "30000/1001", "-i", c, "-c", "copy", i]);
    let want: Vec<Vec<u8>> = (0..24).map(|n| caption_of(n).to_vec()).collect();
    assert_eq!(captions_in(&input), want, "the fixture carries them");

    // ultrafast codes no B-frames: decode order is display order, frame for frame.
    let output = d.join("out.mp4");
    let o = upscale(
        &input,
        &output,
        &fixture("nearest_x2.onnx"),
        &["--preset", "ultrafast", "--segment-frames", "8", "--json"],
    );
    assert_exit(&o, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        report["segments"]["total"].as_u64().unwrap() >= 2,
        "{report}"
    );
    assert_eq!(captions_in(&output), want);
    assert!(!stderr(&o).contains("caption"), "{}", stderr(&o));

    let hevc = d.join("out-hevc.mkv");
    let o = upscale(
        &input,
        &hevc,
        &fixture("nearest_x2.onnx"),
        &["--codec", "hevc", "--preset", "ultrafast", "--json"],
    );
    assert_exit(&o, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let said = "the input's closed captions (CEA-608/708 in the video, 24 frame(s)) are not kept: libx265 in this FFmpeg cannot write them; --codec h264 keeps them";
    assert!(
        report["mux"]["warnings"].to_string().contains(said),
        "{report}"
    );
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}
