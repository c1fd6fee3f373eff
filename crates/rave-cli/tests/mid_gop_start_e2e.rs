//! An MPEG-TS that starts mid-GOP (a broadcast capture, a byte-level cut): the video packets
//! before its first keyframe refer to pictures the file does not hold. They are skipped and
//! said, not counted as damage; every decodable frame and every audio packet is kept.

mod common;

use common::*;

/// `whole` cut at a transport packet a third of the way in, as a capture starts: the cut
/// file, the video packets before its first keyframe, and the frames FFmpeg decodes of it.
fn cut_a_third_in(whole: &std::path::Path, cut: &std::path::Path) -> (u64, usize) {
    let data = std::fs::read(whole).unwrap();
    std::fs::write(cut, &data[188 * (data.len() / 188 / 3)..]).unwrap();
    let flags = ffprobe(
        cut,
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
    (leading, counted_frames(cut) as usize)
}

#[test]
fn a_transport_stream_cut_mid_gop_is_upscaled_from_its_first_keyframe() {
    let dir = scratch();
    let d = dir.path();
    // One keyframe a second, without and with B-frames (x264 on one thread: the same
    // stream everywhere). Fed to a decoder, the packets before the first keyframe leave it
    // complaining about whole B-frames after it ("co located POCs unavailable").
    for (name, b_frames) in [("p", "0"), ("b", "3")] {
        let whole = d.join(format!("whole_{name}.ts"));
        lavfi_clip(
            &whole,
            &[
                "testsrc2=size=64x48:rate=25:duration=4",
                "sine=frequency=300:sample_rate=48000:duration=4",
            ],
            &[
                "-c:v", "libx264", "-threads", "1", "-g", "25", "-bf", b_frames, "-c:a", "aac",
            ],
        );
        let cut = d.join(format!("capture_{name}.ts"));
        let (leading, decodable) = cut_a_third_in(&whole, &cut);
        // One segment, and several (the first read from the start of the file).
        for extra in [&[][..], &["--segment-frames", "20"][..]] {
            let out = d.join(format!("out_{name}.mkv"));
            let mut args = vec!["--json", "--overwrite"];
            args.extend_from_slice(extra);
            let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &args);
            assert_exit(&o, 0);
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let damage = &v["input_damage"];
            assert_eq!(
                damage["frames_before_first_keyframe"], leading,
                "{name} {extra:?}: {v}"
            );
            // The packets before the keyframe are no slots of the timeline either.
            for count in [
                "frames_missing",
                "demux_errors",
                "decoder_errors",
                "timeline_gaps",
            ] {
                assert_eq!(damage[count], 0, "{name} {extra:?} {count}: {v}");
            }
            assert!(
                stderr(&o).contains(&format!(
                    "the input starts mid-GOP (a capture or a cut that does not begin on a keyframe): {leading} video frames before its first keyframe cannot be decoded"
                )),
                "{}",
                stderr(&o)
            );
            assert_eq!(
                frame_times(&out).len(),
                decodable,
                "{name} {extra:?}: every decodable frame"
            );
            assert_eq!(
                packet_count(&out, "a:0"),
                packet_count(&cut, "a:0"),
                "{name} {extra:?}: every audio packet"
            );
        }
    }
}

#[test]
fn a_cut_after_the_last_keyframe_is_refused_in_one_line_that_says_so() {
    let dir = scratch();
    let d = dir.path();
    let whole = d.join("whole.ts");
    lavfi_clip(
        &whole,
        &["testsrc2=size=64x48:rate=25:duration=4"],
        &["-c:v", "libx264", "-threads", "1", "-g", "50"],
    );
    // The last tenth: no keyframe, so no parameter sets either.
    let data = std::fs::read(&whole).unwrap();
    let cut = d.join("tail.ts");
    std::fs::write(&cut, &data[188 * (data.len() / 188 * 9 / 10)..]).unwrap();
    let out = d.join("out.mkv");
    let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("tail.ts") && err.contains("a cut or capture that holds no keyframe"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A stream-copy cut that keeps the frames before its first keyframe (`ffmpeg -ss T -c copy
/// -copyinkf`, or a capture remuxed to Matroska or MP4): FFmpeg's decoder probing the first
/// packets when the file opens complains about them ("co located POCs unavailable", "Not
/// all references are available"); that is no damage of a file that starts mid-GOP. Before,
/// such cuts were refused in every container but MPEG-TS.
#[test]
fn a_stream_copy_cut_mid_gop_in_matroska_mp4_or_webm_is_upscaled_from_its_first_keyframe() {
    let dir = scratch();
    let d = dir.path();
    let sources: [(&str, &[&str]); 2] = [
        (
            "h264.mkv",
            &[
                "-c:v", "libx264", "-threads", "1", "-g", "12", "-bf", "3", "-c:a", "aac",
            ],
        ),
        (
            "vp9.webm",
            &[
                "-c:v",
                "libvpx-vp9",
                "-g",
                "12",
                "-b:v",
                "300k",
                "-c:a",
                "libopus",
            ],
        ),
    ];
    for (name, codec) in sources {
        let whole = d.join(format!("whole_{name}"));
        lavfi_clip(
            &whole,
            &[
                "testsrc2=size=128x96:rate=25:duration=4",
                "sine=frequency=440:duration=4",
            ],
            codec,
        );
        let outputs: &[&str] = match name.ends_with(".webm") {
            true => &["webm", "mkv"],
            false => &["mkv", "mp4", "mov"],
        };
        for ext in outputs {
            let cut = d.join(format!("cut_{name}.{ext}"));
            ffmpeg(&[
                "-i",
                whole.to_str().unwrap(),
                "-ss",
                "0.5",
                "-c",
                "copy",
                "-copyinkf",
                cut.to_str().unwrap(),
            ]);
            let out = d.join("out.mkv");
            let o = upscale(
                &cut,
                &out,
                &fixture("nearest_x2.onnx"),
                &["--json", "--overwrite"],
            );
            assert_exit(&o, 0);
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let damage = &v["input_damage"];
            assert!(
                damage["frames_before_first_keyframe"].as_u64().unwrap() > 0,
                "{name} {ext}: {v}"
            );
            assert_eq!(damage["demux_errors"], 0, "{name} {ext}: {v}");
            assert_eq!(damage["decoder_errors"], 0, "{name} {ext}: {v}");
            assert_eq!(
                frame_times(&out).len() as u64,
                counted_frames(&cut),
                "{name} {ext}: every frame FFmpeg decodes of the cut"
            );
            assert_eq!(
                packet_count(&out, "a:0"),
                packet_count(&cut, "a:0"),
                "{name} {ext}: every audio packet"
            );
        }
    }
}
