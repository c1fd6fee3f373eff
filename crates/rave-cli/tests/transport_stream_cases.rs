//! Damage and joins of MPEG transport streams, beside the corpus run (damage_corpus.rs):
//! joined streams (not damage: one timeline, every frame and packet kept), a transport
//! packet lost at or away from a join, a frame lost without a demuxer error, a file cut on
//! a PES boundary, a keyframe lost inside a segment, and untimed first frames.

mod common;
mod corpus;

use common::*;

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
    // The same picture and sound as another stream (the same bytes twice are one segment
    // written twice: `ts_repeat_cases`).
    let second = dir.path().join("second.ts");
    ffmpeg(&[
        "-i",
        part.to_str().unwrap(),
        "-map",
        "0",
        "-c",
        "copy",
        "-metadata",
        "service_name=second",
        second.to_str().unwrap(),
    ]);
    let (out, v) = upscale_joined(dir.path(), &[&part, &second]);
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
    corpus::pes_starts(data, |id| id == 0xE0)
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

/// An MPEG-TS cut short exactly where a video PES starts (so every transport packet and
/// every PES left is whole, and no demuxer or decoder error shows): where the cut falls in
/// a group of B-frames, the frames decoded ahead of the lost ones leave a gap among the
/// last frames, the only trace a cut leaves in a container that declares no length. Not
/// refused (a stream-copy cut leaves the same), but said as that.
#[test]
fn a_ts_cut_on_a_pes_boundary_in_a_b_frame_group_is_said() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let clean = corpus::make_clean(d, ts);
    let data = std::fs::read(&clean).unwrap();
    let starts = video_pes_starts(&data);
    let mut said = 0;
    for (k, &payload) in starts.iter().enumerate().rev().take(6) {
        let cut = d.join(format!("cut{k}.ts"));
        std::fs::write(&cut, &data[..payload - payload % 188]).unwrap();
        let o = upscale(&cut, &d.join(format!("cut{k}.mkv")), &m, &["--json"]);
        assert_exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let damage = &v["input_damage"];
        if damage["gap_among_last_frames"] == true {
            said += 1;
            assert!(damage["timeline_gaps"].as_u64().unwrap() >= 1, "{v}");
            assert!(
                stderr(&o).contains("the trace of a file cut short"),
                "{}",
                stderr(&o)
            );
        } else {
            assert_eq!(damage["timeline_gaps"], 0, "cut before PES {k}: {v}");
        }
    }
    assert!(said >= 2, "{said} of 6 cuts fell in a B-frame group");
    let o = upscale(&clean, &d.join("clean.mkv"), &m, &["--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["gap_among_last_frames"], false, "{v}");
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

/// Sixteen transport packets of the audio PID lost (a whole MP2 PES): its 4-bit counter
/// comes round again, so the demuxer sees nothing, and the only trace is the gap in the
/// sound. Said (it ended exit 0 without a word, 0.24 s of sound gone); every packet read
/// is kept.
#[test]
fn an_audio_pes_lost_without_a_counter_break_is_said() {
    let dir = scratch();
    let clean = dir.path().join("clean.ts");
    lavfi_clip(
        &clean,
        &["testsrc2=s=96x64:r=25:d=12", "sine=f=440:r=48000:d=12"],
        &["-c:v", "libx264", "-g", "25", "-c:a", "mp2", "-b:a", "96k"],
    );
    let data = std::fs::read(&clean).unwrap();
    let pid =
        |i: usize| (usize::from(data[i * 188 + 1] & 0x1F) << 8) | usize::from(data[i * 188 + 2]);
    let packets = data.len() / 188;
    let audio_pid = 0x101;
    let lost: Vec<usize> = (packets / 2..packets)
        .filter(|&i| pid(i) == audio_pid)
        .take(16)
        .collect();
    let kept: Vec<u8> = (0..packets)
        .filter(|i| !lost.contains(i))
        .flat_map(|i| data[i * 188..(i + 1) * 188].to_vec())
        .collect();
    let damaged = dir.path().join("damaged.ts");
    std::fs::write(&damaged, kept).unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("the input's audio has gaps of 0."), "{err}");
    assert_eq!(packet_count(&out, "a:0"), packet_count(&damaged, "a:0"));
    let model = fixture("nearest_x2.onnx");
    let o = upscale(&clean, &out, &model, &["--overwrite"]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("gaps"), "{}", stderr(&o));
}

/// AAC whose transport packets are written twice every so often (a bad relay): the PES
/// built from them hold damaged ADTS headers, some of which FFmpeg's ADTS-to-Matroska
/// rewrite cannot take ("Not yet implemented in FFmpeg, patches welcome"). Refused as
/// damaged; with --allow-corrupt the run finishes (it ended with exit 4 "writing failed"
/// after all its work), every frame upscaled, the packets that cannot be stored counted.
#[test]
fn audio_packets_no_muxer_can_take_are_counted_not_a_failed_run() {
    let dir = scratch();
    let clean = dir.path().join("clean.ts");
    lavfi_clip(
        &clean,
        &["testsrc2=s=96x64:r=25:d=8", "sine=f=440:d=8"],
        &[
            "-c:v", "libx264", "-g", "12", "-bf", "2", "-c:a", "aac", "-b:a", "64k",
        ],
    );
    let data = std::fs::read(&clean).unwrap();
    let mut doubled = Vec::new();
    for (i, packet) in data.chunks(188).enumerate() {
        doubled.extend_from_slice(packet);
        let pid = (usize::from(packet[1] & 0x1F) << 8) | usize::from(packet[2]);
        if pid == 0x101 && packet[3] & 0x10 != 0 && i % 7 == 3 {
            doubled.extend_from_slice(packet);
        }
    }
    let damaged = dir.path().join("doubled.ts");
    std::fs::write(&damaged, doubled).unwrap();
    let out = dir.path().join("out.mkv");
    let model = fixture("nearest_x2.onnx");
    assert_exit(&upscale(&damaged, &out, &model, &[]), 3);
    let o = upscale(
        &damaged,
        &out,
        &model,
        &["--overwrite", "--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    assert_eq!(frame_times(&out).len(), 200);
    let damage = &json_report(&o)["input_damage"];
    assert!(damage["packets_dropped"].as_u64().unwrap() > 0, "{damage}");
}
