//! Segments of files without an index (MPEG-TS, MPEG-PS): FFmpeg seeks them by searching
//! their bytes for a packet whose decode time is at or before the target, which may land
//! after the keyframe a segment's decoding must start from. RAVE aims earlier and skips to
//! the first keyframe it meets; what the other streams do after a seek is not held against
//! the segment (the plan's reading checked them). Before, an open-GOP H.264 MPEG-TS lost
//! the last frame of its last short segment (decoded from mid-GOP), and any MPEG-PS cut into
//! segments was refused for audio "timestamps going backwards" after the seek.

mod common;

use common::*;

#[test]
fn unindexed_files_in_small_segments_give_the_frames_of_one_segment() {
    let dir = scratch();
    let d = dir.path();
    let sources = [
        (
            "open_gop.ts",
            vec![
                "-c:v",
                "libx264",
                "-threads",
                "1",
                "-g",
                "12",
                "-bf",
                "3",
                "-x264-params",
                "open-gop=1",
                "-c:a",
                "mp2",
            ],
        ),
        (
            "program.mpg",
            vec![
                "-c:v",
                "mpeg2video",
                "-g",
                "12",
                "-bf",
                "2",
                "-b:v",
                "1M",
                "-c:a",
                "mp2",
                "-f",
                "vob",
            ],
        ),
    ];
    for (name, codec) in sources {
        let input = d.join(name);
        lavfi_clip(
            &input,
            &[
                "testsrc2=size=128x96:rate=25:duration=4",
                "sine=frequency=440:duration=4",
            ],
            &codec,
        );
        let lossless = ["--json", "--overwrite", "--encoder", "x264", "--crf", "0"];
        let one = d.join("one.mkv");
        let o = upscale(&input, &one, &fixture("nearest_x2.onnx"), &lossless);
        assert_exit(&o, 0);
        let whole = decode_yuv420(&one);
        for segment_frames in ["5", "12"] {
            let several = d.join("several.mkv");
            let mut args = lossless.to_vec();
            args.extend(["--segment-frames", segment_frames]);
            let o = upscale(&input, &several, &fixture("nearest_x2.onnx"), &args);
            assert_exit(&o, 0);
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert!(
                v["segments"]["total"].as_u64().unwrap() > 1,
                "{name} {segment_frames}: {v}"
            );
            assert_eq!(v["frames_out"], 100, "{name} {segment_frames}: {v}");
            assert!(
                decode_yuv420(&several) == whole,
                "{name} {segment_frames}: the frames of one segment"
            );
            assert_eq!(
                packet_count(&several, "a:0"),
                packet_count(&input, "a:0"),
                "{name} {segment_frames}: every audio packet"
            );
        }
    }
}
