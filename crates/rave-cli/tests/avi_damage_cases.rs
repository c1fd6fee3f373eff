//! Targeted damage of AVI files, beside the corpus run (damage_corpus.rs): a stream
//! header whose `vids` tag lost a bit reads as a stream of no known kind or codec, so the
//! file "has no video": said as the damage it likely is; a stretch of frames lost from the
//! middle, counted by the header's frame count.

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

/// A tenth of an AVI cut out of its middle, or zeroed: the demuxer numbers the frames after
/// it on, so no gap shows in the timeline, and the report said "how many video frames are
/// missing is unknown". The header states the video's length; in a file found damaged it
/// counts what was lost (less a frame: muxers miscount it by one).
#[test]
fn frames_lost_from_the_middle_of_an_avi_are_counted_by_its_header() {
    let dir = scratch();
    let clean = dir.path().join("clean.avi");
    lavfi_clip(
        &clean,
        &["testsrc2=size=64x48:rate=25:duration=8", "sine=duration=8"],
        &["-c:v", "mpeg4", "-g", "25", "-c:a", "mp3"],
    );
    let frames = counted_frames(&clean) as i64;
    let data = std::fs::read(&clean).unwrap();
    let (a, b) = (data.len() * 4 / 10, data.len() * 5 / 10);
    let cut = [&data[..a], &data[b..]].concat();
    let zeroed = [&data[..a], &vec![0u8; b - a][..], &data[b..]].concat();
    for (name, bytes) in [("cut", cut), ("zeroed", zeroed)] {
        let damaged = dir.path().join(format!("{name}.avi"));
        std::fs::write(&damaged, bytes).unwrap();
        let out = dir.path().join(format!("{name}.mkv"));
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
        assert_exit(&o, 3);
        assert!(!stderr(&o).contains("unknown"), "{name}: {}", stderr(&o));

        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--allow-corrupt", "--json"],
        );
        let v = json_report(&o);
        let lost = frames - v["frames_out"].as_i64().unwrap();
        let missing = v["input_damage"]["frames_missing"].as_i64().unwrap();
        assert!(lost >= 15, "{name}: {lost} frames lost");
        assert!(
            lost - 1 <= missing && missing <= lost,
            "{name}: {missing} missing of {lost} lost"
        );
    }
}
