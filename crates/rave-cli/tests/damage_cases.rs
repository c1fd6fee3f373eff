//! Targeted damage, beside the corpus run (damage_corpus.rs): whole clusters lost in HEVC
//! 10-bit Matroska, audio timestamps going backwards, a copied packet no muxer can store, a
//! truncated FLV that starts after zero, an MP4 of which no frame decodes, B-frames timed
//! in decode order, an AVI whose header is lost, and joined
//! transport streams (not damage: one timeline, every frame and packet kept).

mod common;
mod corpus;

use common::*;
use corpus::FRAMES;

#[test]
fn damage_in_the_middle_of_hevc_10bit_matroska_is_counted() {
    let dir = scratch();
    let clean = dir.path().join("hevc10.mkv");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=320x176:rate=24:duration=5.5",
            "sine=duration=5.5",
        ],
        &[
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p10le",
            "-preset",
            "ultrafast",
            "-x265-params",
            "log-level=error:keyint=24",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
    // Garbage over 8 KiB at 30% of the file: the demuxer loses whole clusters.
    let mut data = std::fs::read(&clean).unwrap();
    let at = data.len() * 3 / 10;
    corpus::fill_garbage(&mut data[at..at + 8192], 0x1234_5678);
    let damaged = dir.path().join("damaged.mkv");
    std::fs::write(&damaged, data).unwrap();
    let readable = frame_times(&damaged).len() as u64;
    assert!(
        readable < 132,
        "the damage must lose frames for this test ({readable})"
    );
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &v["error"]["damage"];
    let missing = d["frames_missing"].as_u64().unwrap();
    assert!(
        missing >= 132 - readable,
        "{missing} counted, {readable} of 132 readable: {v}"
    );
    assert!(d["demux_errors"].as_u64().unwrap() > 0, "{v}");
    assert!(
        d["audio_missing_s"].as_f64().unwrap() > 0.5,
        "whole clusters of audio: {v}"
    );
    assert!(!out.exists());
}

#[test]
fn audio_timestamps_going_backwards_are_input_damage_and_dropped_when_allowed() {
    let dir = scratch();
    let clean = dir.path().join("clean.mkv");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=64x48:rate=25:duration=1.2",
            "sine=sample_rate=48000:duration=1.2",
        ],
        &[
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-write_crc32",
            "0",
            "-shortest",
        ],
    );
    let original = packet_count(&clean, "a:0");
    let damaged = dir.path().join("back.mkv");
    std::fs::write(
        &damaged,
        corpus::with_audio_going_back(&std::fs::read(&clean).unwrap(), 30),
    )
    .unwrap();
    for out_name in ["out.mp4", "out.mkv"] {
        let out = dir.path().join(out_name);
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert!(
            v["error"]["damage"]["packets_dropped"].as_u64().unwrap() >= 1,
            "{v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("timestamps go backwards"),
            "{v}"
        );
        assert!(!out.exists());

        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--json", "--allow-corrupt"],
        );
        assert_exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let dropped = v["input_damage"]["packets_dropped"].as_u64().unwrap() as usize;
        assert!(dropped >= 1, "{v}");
        assert_eq!(packet_count(&out, "a:0"), original - dropped, "{out_name}");
        assert_eq!(frame_times(&out).len(), 30, "{out_name}");
    }
}

/// An ADTS header destroyed inside an MPEG-TS: the AAC decoder of the plan's read refuses
/// the packet, so the input is refused before any segment is upscaled; with
/// --allow-corrupt the packet, which no muxer can store either, is left out and counted.
#[test]
fn a_copied_packet_no_muxer_can_store_is_input_damage() {
    let dir = scratch();
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let clean = corpus::make_clean(dir.path(), ts);
    let original = packet_count(&clean, "a:0");
    let damaged = dir.path().join("adts.ts");
    std::fs::write(
        &damaged,
        corpus::with_broken_adts_header(&std::fs::read(&clean).unwrap()),
    )
    .unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["kind"], "corrupt_stream", "{v}");
    assert_eq!(v["error"]["damage"]["audio_packets_damaged"], 1, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not decode"),
        "{v}"
    );
    assert!(!out.exists());
    assert!(
        !dir.path().join(".out.mkv.rave-work").exists() && !stderr(&o).contains("segment"),
        "refused before work: {}",
        stderr(&o)
    );
    let o = upscale(
        &damaged,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--json", "--allow-corrupt"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["packets_dropped"], 1, "{v}");
    assert_eq!(v["input_damage"]["audio_packets_damaged"], 1, "{v}");
    assert_eq!(packet_count(&out, "a:0"), original - 1);
    assert_eq!(frame_times(&out).len(), FRAMES as usize);
}

/// An MP4 whose video timing table is zeroed reads, but no frame of it decodes: refused
/// (exit 3) with nothing left behind, neither a work folder nor advice to run again, which
/// would fail the same way.
#[test]
fn an_input_of_which_no_frame_decodes_leaves_no_work_folder() {
    let dir = scratch();
    let clean = make_clip(dir.path(), "clean.mp4", "32x32", 25);
    let mut bytes = std::fs::read(&clean).unwrap();
    let at = bytes.windows(4).position(|w| w == b"stts").unwrap();
    bytes[at + 4..at + 68].fill(0);
    let damaged = dir.path().join("no_timing.mp4");
    std::fs::write(&damaged, bytes).unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(err.contains("no video frame could be decoded"), "{err}");
    assert!(!err.contains("work folder"), "{err}");
    assert_eq!(sorted_names(dir.path()), ["clean.mp4", "no_timing.mp4"]);
}

/// A remux that copied decode times into presentation times (`setts=pts=DTS`) on video with
/// B-frames: the packets look cleanly timed, but the decoder hands frames out in another
/// order than their times, so segments cut by time would not get their planned frames. The
/// job is read as one segment, where the timeline shows the damage: refused (exit 3, no
/// work folder), and with --allow-corrupt upscaled with the count and the reason.
#[test]
fn b_frames_timed_in_decode_order_are_read_as_one_segment_and_counted() {
    let dir = scratch();
    let clean = dir.path().join("b.mp4");
    let bframes = ["-c:v", "libx264", "-bf", "2", "-g", "10"];
    lavfi_clip(
        &clean,
        &["testsrc2=size=96x64:rate=25:duration=2"],
        &bframes,
    );
    let damaged = dir.path().join("pts_from_dts.mp4");
    let (c, d) = (clean.to_str().unwrap(), damaged.to_str().unwrap());
    ffmpeg(&["-i", c, "-c", "copy", "-bsf:v", "setts=pts=DTS", d]);
    let out = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let segmented = ["--segment-frames", "10"];
    let o = upscale(&damaged, &out, &m, &segmented);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("damaged input") && err.contains("duplicated frames"),
        "{err}"
    );
    assert!(!err.contains("work folder"), "{err}");
    assert_eq!(sorted_names(dir.path()), ["b.mp4", "pts_from_dts.mp4"]);
    let o = upscale(
        &damaged,
        &out,
        &m,
        &[&segmented[..], &["--allow-corrupt"]].concat(),
    );
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("segments: 1 ")
            && text.contains("every packet's presentation time equals its decode time"),
        "{text}"
    );
    // Matroska stores the presentation times only (FFmpeg guesses the others): they never
    // go back in decode order, which B-frames make them do.
    let in_mkv = dir.path().join("pts_from_dts.mkv");
    ffmpeg(&["-i", d, "-c", "copy", in_mkv.to_str().unwrap()]);
    let o = upscale(
        &in_mkv,
        &out,
        &m,
        &[&segmented[..], &["--allow-corrupt", "--overwrite"]].concat(),
    );
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("segments: 1 ")
            && stdout(&o).contains("never go back in decoding order"),
        "{}",
        stdout(&o)
    );
    // The same video with its own times is cut into segments as before, in either.
    for (name, container) in [
        ("clean.mkv", &clean),
        ("clean2.mkv", &dir.path().join("b.mkv")),
    ] {
        if !container.exists() {
            ffmpeg(&["-i", c, "-c", "copy", container.to_str().unwrap()]);
        }
        let o = upscale(container, &dir.path().join(name), &m, &segmented);
        assert_exit(&o, 0);
        assert!(stdout(&o).contains("segments: 5 "), "{}", stdout(&o));
    }
}

/// An AVI whose header is zeroed: FFmpeg's probe finds no AVI and reads the pictures as a
/// raw MPEG-4 stream, the audio gone unseen. Refused as damage; with --allow-corrupt the
/// report says the audio could not be read instead of dropping it in silence.
#[test]
fn a_container_whose_header_is_lost_is_damage_that_names_the_lost_streams() {
    let dir = scratch();
    let clean = dir.path().join("clean.avi");
    let sources = ["testsrc2=size=96x64:rate=25:duration=2", "sine=duration=2"];
    lavfi_clip(&clean, &sources, &["-c:v", "mpeg4", "-c:a", "pcm_s16le"]);
    let mut bytes = std::fs::read(&clean).unwrap();
    let movi = bytes.windows(4).position(|w| w == b"movi").unwrap();
    bytes[..movi - 8].fill(0);
    let damaged = dir.path().join("header_lost.avi");
    std::fs::write(&damaged, bytes).unwrap();
    let m = fixture("nearest_x2.onnx");
    let lost = "the file is named .avi but holds no readable .avi header (FFmpeg reads it as a raw m4v video stream): its container header is damaged (or it is a raw stream misnamed .avi), and any audio or subtitles in it cannot be read";
    let o = upscale(&damaged, &dir.path().join("out.mkv"), &m, &[]);
    assert_exit(&o, 3);
    assert!(stderr(&o).contains(lost), "{}", stderr(&o));
    let o = upscale(
        &damaged,
        &dir.path().join("out.mkv"),
        &m,
        &["--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["input_damage"].to_string().contains(lost), "{v}");
}

/// An FLV whose timeline starts at 1.5 s declares a duration a reader cannot tell from a
/// timeline end (FFmpeg's FLV muxer writes the span, its Matroska muxer the end), so the
/// duration alone misses a cut at 90%: the chain of FLV tags, each followed by its length,
/// is what shows it, wherever the file ends.
#[test]
fn a_truncated_flv_starting_after_zero_is_refused() {
    let dir = scratch();
    let clean = dir.path().join("offset.flv");
    lavfi_clip(
        &clean,
        &["testsrc2=size=64x48:rate=25:duration=2", "sine=duration=2"],
        &["-c:v", "libx264", "-c:a", "aac", "-output_ts_offset", "1.5"],
    );
    let data = std::fs::read(&clean).unwrap();
    for pct in [50, 80, 90, 97] {
        let cut = dir.path().join(format!("cut{pct}.flv"));
        std::fs::write(&cut, &data[..data.len() * pct / 100]).unwrap();
        let out = dir.path().join(format!("cut{pct}.mkv"));
        let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["error"]["damage"]["truncated"], true, "{pct}%: {v}");
        assert!(!out.exists());
    }
}

/// `parts` joined into one MPEG-TS (`cat`), upscaled as they are: the seam restarts every
/// PID's continuity counter, which belongs to the join and is no damage. The output, and
/// the report, which must show the one timestamp reset and no damage.
fn upscale_joined(
    dir: &std::path::Path,
    parts: &[&std::path::Path],
) -> (std::path::PathBuf, serde_json::Value) {
    let joined: Vec<u8> = parts
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let input = dir.join("joined.ts");
    std::fs::write(&input, joined).unwrap();
    let out = dir.join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["decode"]["timestamp_resets"].as_array().unwrap().len(),
        1,
        "{v}"
    );
    assert_eq!(v["input_damage"]["demux_errors"], 0, "{v}");
    (out, v)
}

/// A transport packet lost near the seam of a join (its PID's counter breaks twice there)
/// or away from it is damage still: only each PID's one break at the join is forgiven.
#[test]
fn a_packet_lost_at_or_away_from_a_join_is_still_damage() {
    let dir = scratch();
    let d = dir.path();
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let part = corpus::make_clean(d, ts);
    let data = std::fs::read(&part).unwrap();
    let video_pid = |at: usize| {
        data[at] == 0x47 && (u16::from(data[at + 1] & 0x1f) << 8 | u16::from(data[at + 2])) == 0x100
    };
    // Without the video PID's third transport packet after the seam, or one in the middle
    // of the first part.
    let packets = data.len() / 188;
    let second_part: Vec<usize> = (0..packets)
        .map(|k| k * 188)
        .filter(|&at| video_pid(at))
        .collect();
    for (name, lost_at_seam) in [("seam", true), ("middle", false)] {
        let mut joined = data.clone();
        let mut second = data.clone();
        let lost = match lost_at_seam {
            true => second_part[2],
            false => second_part[second_part.len() / 2],
        };
        match lost_at_seam {
            true => drop(second.drain(lost..lost + 188)),
            false => drop(joined.drain(lost..lost + 188)),
        }
        joined.extend_from_slice(&second);
        let input = d.join(format!("joined_{name}.ts"));
        std::fs::write(&input, joined).unwrap();
        let o = upscale(
            &input,
            &d.join("out.mkv"),
            &fixture("nearest_x2.onnx"),
            &["--json"],
        );
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let damage = &v["error"]["damage"];
        assert!(damage["demux_errors"].as_u64().unwrap() >= 1, "{name}: {v}");
        assert!(
            damage["first_problem"]
                .to_string()
                .contains("Continuity check failed for pid 256"),
            "{name}: {v}"
        );
    }
}

#[test]
fn joined_transport_streams_keep_every_frame_and_packet_on_one_timeline() {
    let dir = scratch();
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let part = corpus::make_clean(dir.path(), ts);
    let (frames, audio) = (frame_times(&part).len(), packet_count(&part, "a:0"));
    let (out, v) = upscale_joined(dir.path(), &[&part, &part]);
    assert_eq!(v["input_damage"]["frames_dropped"], 0, "{v}");
    assert_eq!(v["input_damage"]["packets_dropped"], 0, "{v}");
    let times: Vec<f64> = frame_times(&out)
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(times.len(), 2 * frames, "every frame of both parts");
    assert!(
        times.windows(2).all(|w| w[0] < w[1]),
        "one increasing timeline: {times:?}"
    );
    assert_eq!(
        packet_count(&out, "a:0"),
        2 * audio,
        "every audio packet of both parts"
    );
    assert!(
        v["mux"]["warnings"]
            .to_string()
            .contains("timestamps restart"),
        "{v}"
    );
}

/// Where each video PES of a transport stream starts (payload 00 00 01 E0).
fn video_pes_starts(data: &[u8]) -> Vec<usize> {
    let starts: Vec<usize> = (0..data.len() / 188)
        .map(|k| k * 188)
        .filter(|&at| data[at] == 0x47 && data[at + 1] & 0x40 != 0)
        .filter_map(|at| {
            let payload = match (data[at + 3] >> 4) & 3 {
                3 => at + 5 + usize::from(data[at + 4]),
                1 => at + 4,
                _ => return None,
            };
            (data[payload..payload + 4] == [0, 0, 1, 0xE0]).then_some(payload)
        })
        .collect();
    assert!(starts.len() >= 10, "{} PES starts", starts.len());
    starts
}

/// `clean` with the header of its middle video PES zeroed: the demuxer drops that frame
/// without a word and the transport packets stay whole.
fn lose_a_pes(clean: &std::path::Path, damaged: &std::path::Path) {
    let middle = video_pes_starts(&std::fs::read(clean).unwrap()).len() / 2;
    lose_pes(clean, damaged, middle);
}

/// `clean` with the header of its `nth` video PES zeroed.
fn lose_pes(clean: &std::path::Path, damaged: &std::path::Path, nth: usize) {
    let mut data = std::fs::read(clean).unwrap();
    let at = video_pes_starts(&data)[nth];
    data[at..at + 9].fill(0);
    std::fs::write(damaged, data).unwrap();
}

/// `file` with the timestamps of its `nth` video PES taken away (the PTS/DTS flags
/// cleared; the header keeps its length): the frame is there, with no time of its own.
fn untime_a_pes(file: &std::path::Path, nth: usize) {
    let mut data = std::fs::read(file).unwrap();
    let at = video_pes_starts(&data)[nth];
    data[at + 7] &= 0x3F;
    std::fs::write(file, data).unwrap();
}

/// A video frame lost from an MPEG-TS without a demuxer error. With B-frames the decoder
/// misses its reference and the input is refused as damaged. Without them (P-frames only)
/// the decoder conceals the loss and every picture after it up to the next keyframe,
/// saying only "Frame num gap" in its debug log: that is damage too (before, the run
/// finished with a warning about a gap in the timeline, the concealed pictures in the
/// output); with --allow-corrupt the run finishes, counts it and says the gap.
#[test]
fn a_ts_frame_lost_without_a_demuxer_error_is_refused_or_said() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let with_b = corpus::make_clean(d, ts);
    lose_a_pes(&with_b, &d.join("lost_b.ts"));
    let o = upscale(&d.join("lost_b.ts"), &d.join("b.mkv"), &m, &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["damage"]["frames_missing"], 1, "{v}");

    let clean = d.join("p_only.ts");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=160x120:rate=25:duration=1",
            "sine=duration=1",
        ],
        &["-c:v", "libx264", "-g", "25", "-bf", "0", "-c:a", "mp2"],
    );
    let frames = frame_times(&clean).len();
    lose_a_pes(&clean, &d.join("lost.ts"));
    let out = d.join("out.mkv");
    let o = upscale(&d.join("lost.ts"), &out, &m, &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let first = v["error"]["damage"]["first_problem"].to_string();
    assert!(first.contains("Frame num gap"), "{v}");
    assert!(!out.exists());
    let o = upscale(&d.join("lost.ts"), &out, &m, &["--json", "--allow-corrupt"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["frames_missing"], 1, "{v}");
    assert!(
        v["input_damage"]["decoder_errors"].as_u64().unwrap() >= 1,
        "{v}"
    );
    assert_eq!(frame_times(&out).len(), frames - 1);
    // The clean file says nothing of the kind.
    let o = upscale(&clean, &d.join("clean.mkv"), &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 0, "{v}");
    assert!(!stderr(&o).contains("frame slot"), "{}", stderr(&o));

    // A frame whose PES lost its timestamps is decoded and kept: no slot is missing (it
    // was said to be), and with a frame lost besides, one is (counted with --allow-corrupt).
    let untimed = d.join("untimed.ts");
    std::fs::copy(&clean, &untimed).unwrap();
    untime_a_pes(&untimed, 5);
    let out = d.join("untimed.mkv");
    let o = upscale(&untimed, &out, &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 0, "{v}");
    assert!(!stderr(&o).contains("frame slot"), "{}", stderr(&o));
    assert_eq!(frame_times(&out).len(), frames);
    let both = d.join("both.ts");
    lose_a_pes(&untimed, &both);
    let o = upscale(
        &both,
        &d.join("both.mkv"),
        &m,
        &["--json", "--allow-corrupt"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["frames_missing"], 1, "{v}");
}

/// Two B-frame recordings joined (`cat a.ts b.ts`) whose AAC audio starts a little before
/// the video: the splice continues every stream from where the longest ended, which leaves a
/// hole in the video timeline at the seam. That hole is no lost frame: every frame is there
/// and none is counted missing.
#[test]
fn the_hole_a_splice_leaves_is_no_missing_frame() {
    let dir = scratch();
    let d = dir.path();
    let (a, b) = (d.join("a.ts"), d.join("b.ts"));
    offset_ts_clip(&a, "testsrc2=size=96x64:rate=25:duration=2", 2, "30");
    offset_ts_clip(&b, "testsrc=size=96x64:rate=25:duration=2", 2, "5");
    let (out, v) = upscale_joined(d, &[&a, &b]);
    assert_eq!(v["input_damage"]["frames_missing"], 0, "{v}");
    assert_eq!(frame_times(&out).len(), 100);
}

/// A keyframe lost from a P-frame MPEG-TS cut into segments: the decoder drops the frames
/// that refer to it, saying only "Frame num gap" in its debug log, so the segment decodes
/// fewer frames than its packets. That is damage of the input (exit 3, with --allow-corrupt
/// the way to read it as one segment, no work folder kept), not an internal error (it was
/// exit 1).
#[test]
fn a_lost_keyframe_in_a_segment_is_input_damage_not_an_internal_error() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let clean = d.join("g10.ts");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=128x72:rate=25:duration=10",
            "sine=duration=10",
        ],
        &["-c:v", "libx264", "-g", "10", "-bf", "0", "-c:a", "aac"],
    );
    let lost = d.join("lost_key.ts");
    lose_pes(&clean, &lost, 10);
    let out = d.join("out.mkv");
    let o = upscale(&lost, &out, &m, &["--json", "--jobs", "2"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["error"]["damage"]["first_problem"]
            .to_string()
            .contains("Frame num gap"),
        "{v}"
    );
    // Allowed, the segment still decodes fewer frames than planned.
    let o = upscale(
        &lost,
        &out,
        &m,
        &["--json", "--jobs", "2", "--allow-corrupt"],
    );
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["error"]["damage"]["frames_missing"].as_u64() > Some(0),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .to_string()
            .contains("--segment-frames 1000000000"),
        "{v}"
    );
    assert!(!out.exists());
    assert!(!d.join(".out.mkv.rave-work").exists(), "no work to resume");
    // As advised: read as one segment, what is missing counted.
    let o = upscale(
        &lost,
        &out,
        &m,
        &[
            "--json",
            "--allow-corrupt",
            "--segment-frames",
            "1000000000",
        ],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let missing = v["input_damage"]["frames_missing"].as_u64().unwrap();
    assert!(missing > 0, "{v}");
    assert_eq!(frame_times(&out).len() as u64, 250 - missing);
}

/// The first video PES (or the first three) of an MPEG-TS without timestamps: those frames
/// go one frame apart before the first timed one, and the output's frames have the clean
/// file's times (the first frame was put 1.5 s early, and the rest 63 ms early against the
/// audio, in MP4; in Matroska it had none).
#[test]
fn untimed_first_frames_go_before_the_first_timed_one() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    for (name, bf) in [("p", "0"), ("b", "2")] {
        let clean = d.join(format!("{name}.ts"));
        lavfi_clip(
            &clean,
            &["testsrc2=size=128x72:rate=25:duration=2", "sine=duration=2"],
            &["-c:v", "libx264", "-g", "25", "-bf", bf, "-c:a", "aac"],
        );
        let reference = d.join(format!("{name}_clean.mp4"));
        assert_exit(&upscale(&clean, &reference, &m, &[]), 0);
        for firsts in [1, 3] {
            let untimed = d.join(format!("{name}_{firsts}.ts"));
            std::fs::copy(&clean, &untimed).unwrap();
            for nth in 0..firsts {
                untime_a_pes(&untimed, nth);
            }
            for ext in ["mp4", "mkv"] {
                let out = d.join(format!("{name}_{firsts}.{ext}"));
                let o = upscale(&untimed, &out, &m, &["--json"]);
                assert_exit(&o, 0);
                assert_eq!(
                    frame_times(&out),
                    frame_times(&reference),
                    "{name}, {firsts} untimed, {ext}"
                );
            }
        }
    }
}
