//! An MPEG-TS that starts mid-GOP (a broadcast capture, a byte-level cut): the video packets
//! before its first keyframe refer to pictures the file does not hold. They are skipped and
//! said, not counted as damage; every decodable frame and every audio packet is kept.

mod common;

use common::*;

#[test]
fn a_transport_stream_cut_mid_gop_is_upscaled_from_its_first_keyframe() {
    let dir = scratch();
    let d = dir.path();
    let whole = d.join("whole.ts");
    // One keyframe a second, no B-frames (x264 on one thread: the same stream everywhere).
    lavfi_clip(
        &whole,
        &[
            "testsrc2=size=64x48:rate=25:duration=4",
            "sine=frequency=300:sample_rate=48000:duration=4",
        ],
        &[
            "-c:v", "libx264", "-threads", "1", "-g", "25", "-bf", "0", "-c:a", "aac",
        ],
    );
    // Cut at a transport packet a third of the way in, as a capture starts.
    let data = std::fs::read(&whole).unwrap();
    let cut = d.join("capture.ts");
    std::fs::write(&cut, &data[188 * (data.len() / 188 / 3)..]).unwrap();
    let flags = ffprobe(
        &cut,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "packet=flags",
            "-of",
            "csv=p=0",
        ],
    );
    let leading = flags
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take_while(|l| !l.starts_with('K'))
        .count() as u64;
    assert!(leading > 0, "the cut starts mid-GOP: {flags}");
    let decodable: usize = ffprobe(
        &cut,
        &[
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "csv=p=0",
        ],
    )
    // Listed under the program and under the streams.
    .split_whitespace()
    .next()
    .unwrap()
    .parse()
    .unwrap();

    let out = d.join("out.mkv");
    let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["input_damage"]["frames_before_first_keyframe"], leading,
        "{v}"
    );
    assert_eq!(v["input_damage"]["frames_missing"], 0, "{v}");
    assert_eq!(v["input_damage"]["demux_errors"], 0, "{v}");
    assert!(
        stderr(&o).contains(&format!(
            "the input starts mid-GOP (a capture or a cut that does not begin on a keyframe): {leading} video frames before its first keyframe cannot be decoded"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(frame_times(&out).len(), decodable, "every decodable frame");
    assert_eq!(
        packet_count(&out, "a:0"),
        packet_count(&cut, "a:0"),
        "every audio packet"
    );
}
