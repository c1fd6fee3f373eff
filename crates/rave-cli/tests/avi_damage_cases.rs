//! Targeted damage of AVI headers, beside the corpus run (damage_corpus.rs): a stream
//! header whose `vids` tag lost a bit reads as a stream of no known kind or codec, so the
//! file "has no video": said as the damage it likely is.

mod common;

use common::*;

#[test]
fn an_avi_whose_video_header_is_damaged_says_so() {
    let dir = scratch();
    let clean = dir.path().join("clean.avi");
    lavfi_clip(
        &clean,
        &["testsrc2=size=64x48:rate=25:duration=1", "sine=duration=1"],
        &["-c:v", "mpeg4", "-c:a", "mp3"],
    );
    let mut data = std::fs::read(&clean).unwrap();
    // `strh`, its size, then the stream type.
    let at = data
        .windows(12)
        .position(|w| &w[..4] == b"strh" && &w[8..] == b"vids")
        .expect("the video stream header");
    data[at + 8] ^= 0x10;
    let damaged = dir.path().join("damaged.avi");
    std::fs::write(&damaged, &data).unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("has no video stream (found: data none")
            && err.contains("its header is damaged (use a complete copy)"),
        "{err}"
    );
    assert!(!out.exists());
    // A file that holds no video at all says only that.
    let sound = dir.path().join("sound.avi");
    lavfi_clip(&sound, &["sine=duration=1"], &["-c:a", "mp3"]);
    let o = upscale(&sound, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    assert!(!stderr(&o).contains("damaged"), "{}", stderr(&o));
}
