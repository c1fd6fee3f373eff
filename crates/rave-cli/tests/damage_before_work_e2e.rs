//! Damage that only the end of the file reveals (fewer frames than the container lists,
//! streams ending before their declared end) is known once the plan has read every
//! packet: the input is refused then, before any segment is upscaled, leaving nothing
//! behind; `--allow-corrupt` upscales what is there.

mod common;

use common::*;

#[test]
fn damage_the_end_reveals_is_refused_before_any_segment_is_upscaled() {
    let dir = scratch();
    let d = dir.path();
    // 30 frames in a Matroska file whose tags list 40 (as mkvmerge's statistics would for
    // a file that lost its last 10).
    let input = d.join("tagged.mkv");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=64x48:rate=25:duration=1.2",
            "sine=sample_rate=48000:duration=1.2",
        ],
        &[
            "-c:v",
            "libx264",
            "-g",
            "10",
            "-c:a",
            "aac",
            "-shortest",
            "-metadata:s:v:0",
            "NUMBER_OF_FRAMES=40",
        ],
    );
    let out = d.join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let o = upscale(&input, &out, &m, &["--json", "--segment-frames", "10"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["kind"], "corrupt_stream", "{v}");
    assert_eq!(v["error"]["damage"]["frames_missing"], 10, "{v}");
    // Refused before the segments: none upscaled, none kept, nothing said of them.
    assert!(!stderr(&o).contains("segment"), "{}", stderr(&o));
    assert_eq!(sorted_names(d), ["tagged.mkv"]);

    let o = upscale(&input, &out, &m, &["--json", "--allow-corrupt"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["frames_out"], 30, "{v}");
    assert_eq!(v["input_damage"]["frames_missing"], 10, "{v}");
}
