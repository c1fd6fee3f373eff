//! Damaged presentation times of single frames that the packets alone cannot tell (a few
//! frames off, within the reordering of B-frames): a flipped bit in an MP4 composition
//! offset, a Matroska video block moved by less than the far leaps of
//! block_timestamp_cases.rs. The decoded frames show it: one out of line with the frames
//! around it.

mod common;
mod corpus;

use common::*;

/// A scratch folder with the clean clip `name` (its bytes returned) and its output.
fn clean_and_upscaled(name: &str) -> (tempfile::TempDir, Vec<u8>, std::path::PathBuf) {
    let dir = scratch();
    let clean = dir.path().join(name);
    four_second_h264_aac(&clean);
    let want = dir.path().join("clean-out.mkv");
    assert_exit(&upscale(&clean, &want, &fixture("nearest_x2.onnx"), &[]), 0);
    (dir, std::fs::read(&clean).unwrap(), want)
}

/// Refused by default, saying where the frame goes; with --allow-corrupt every frame at its clean
/// time with its clean picture, every audio packet as in the clean output.
fn assert_put_back(damaged: &std::path::Path, want: &std::path::Path, what: &str) {
    let model = fixture("nearest_x2.onnx");
    let out = damaged.with_extension("out.mkv");
    let o = upscale(damaged, &out, &model, &[]);
    assert_exit(&o, 3);
    // Told by the frames (out of line) or, for a leap beyond B-frame reordering, by the
    // packets.
    let err = stderr(&o);
    assert!(err.contains("the frame is put"), "{what}: {err}");
    // Counted: a frame the frames put back is said so (it was "damaged data", no count).
    let by_frames = err.contains("so the frame is put there");
    assert!(
        !err.contains("damaged data") && (!by_frames || err.contains("put back in place")),
        "{what}: {err}"
    );
    assert!(!out.exists(), "{what}");
    let o = upscale(damaged, &out, &model, &["--allow-corrupt", "--json"]);
    assert_exit(&o, 0);
    let v = json_report(&o);
    let moved = v["input_damage"]["frames_moved"].as_u64().unwrap();
    assert!(!by_frames || moved >= 1, "{what}: {v}");
    assert_eq!(v["input_damage"]["frames_missing"], 0, "{what}: {v}");
    assert_eq!(v["input_damage"]["frames_dropped"], 0, "{what}: {v}");
    assert_eq!(frame_times(&out), frame_times(want), "{what}");
    assert!(
        decode_rgb(&out) == decode_rgb(want),
        "{what}: pictures differ"
    );
    assert_same_audio(&out, want, what);
}

/// One or two frames' composition offsets damaged by a flipped bit: 0.64 s, 80 ms or one
/// frame off. FFmpeg's best-effort time went over to the decode times at the first, and
/// the frame after it went "backwards": every later frame was moved by the damage (0.64 s)
/// or by the decoder's delay (a frame), out of step with the sound to the end, and frames
/// were dropped as duplicates (98 of 100). Now the damaged frame is put back in the place
/// the frames around it leave free, and every other keeps its time.
#[test]
fn a_damaged_composition_offset_moves_one_frame_back_not_the_video_after_it() {
    let (dir, data, want) = clean_and_upscaled("clean.mp4");
    for (samples, bit) in [
        (50..51, 13),
        (50..51, 10),
        (50..51, 9),
        (50..52, 13),
        (50..52, 10),
    ] {
        let what = format!("samples {samples:?}, bit {bit}");
        let damaged = dir
            .path()
            .join(format!("ctts{}-{}-{bit}.mp4", samples.start, samples.end));
        let bytes = corpus::with_composition_offsets_flipped(&data, samples, bit);
        std::fs::write(&damaged, bytes).unwrap();
        assert_put_back(&damaged, &want, &what);
    }
}

/// A Matroska video block moved 80 ms or 640 ms (too little for the far-leap check of the
/// packets, which allows for B-frame reordering): the same, from the block's own time.
#[test]
fn a_matroska_video_block_a_few_frames_off_goes_back_in_line() {
    let (dir, data, want) = clean_and_upscaled("clean.mkv");
    for (block, ms) in [(60, 80), (61, 640), (60, -640)] {
        let what = format!("block {block} moved {ms} ms");
        let damaged = dir.path().join(format!("moved{block}{ms}.mkv"));
        let bytes = corpus::with_blocks_moved(&data, 1, block..block + 1, ms);
        std::fs::write(&damaged, bytes).unwrap();
        assert_put_back(&damaged, &want, &what);
    }
}

/// A frame among the last whose composition offset is damaged 0.32 s or 0.64 s late (or two
/// from the middle 5.2 s late): its time falls past the end of the MP4 edit list, FFmpeg's
/// demuxer discards it, and the run said "complete" one frame short (99 of 100, a
/// one-frame "gap" warned about as a recorder's; the two from the middle were counted as
/// an overrun, none missing). A frame the container hides past its end, apart from the
/// last frame shown, is damage: refused, and with --allow-corrupt counted missing.
#[test]
fn a_last_frame_hidden_past_the_edit_list_by_its_damaged_time_is_counted() {
    let (dir, data, _) = clean_and_upscaled("clean.mp4");
    let model = fixture("nearest_x2.onnx");
    // Two frames from the middle 5.2 s late run past the declared end too: missing, not
    // the overrun's.
    for (samples, bit) in [(98..99, 13), (97..98, 12), (99..100, 13), (50..52, 16)] {
        let what = format!("samples {samples:?}, bit {bit}");
        let (first, lost) = (samples.start, samples.len());
        let damaged = dir.path().join(format!("last{first}-{bit}.mp4"));
        let bytes = corpus::with_composition_offsets_flipped(&data, samples, bit);
        std::fs::write(&damaged, bytes).unwrap();
        let out = dir.path().join(format!("last{first}-{bit}.mkv"));
        let o = upscale(&damaged, &out, &model, &[]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(err.contains("the container hides"), "{what}: {err}");
        assert!(
            lost > 1 || err.contains("1 of 100 video frames missing"),
            "{what}: {err}"
        );
        let o = upscale(&damaged, &out, &model, &["--allow-corrupt", "--json"]);
        assert_exit(&o, 0);
        let v = json_report(&o);
        assert_eq!(v["input_damage"]["frames_missing"], lost, "{what}: {v}");
        assert_eq!(counted_frames(&out), 100 - lost as u64, "{what}");
    }
}

/// A clean HEVC MP4 with open GOPs trimmed as QuickTime trims (its edit list and durations
/// shortened to 1 s): FFmpeg hides the frames past the trim up to the next keyframe, after
/// the leading pictures it does not return. The frames shown leave no place free: no
/// damage (it was refused as a frame hidden by a damaged time), and no gap said either
/// (the hidden frames past the end were counted as slots of the timeline).
#[test]
fn a_trim_that_hides_an_open_gops_keyframe_is_no_damage() {
    let dir = scratch();
    let full = dir.path().join("open-gop.mp4");
    lavfi_clip(
        &full,
        &["testsrc2=size=96x64:rate=25:duration=4"],
        &[
            "-c:v",
            "libx265",
            "-x265-params",
            "keyint=25:log-level=error",
        ],
    );
    let trimmed = dir.path().join("trimmed.mp4");
    let bytes = corpus::with_shown_until(&std::fs::read(&full).unwrap(), 1000);
    std::fs::write(&trimmed, bytes).unwrap();
    let out = dir.path().join("trimmed.mkv");
    let o = upscale(&trimmed, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 0);
    let v = json_report(&o);
    assert_eq!(v["input_damage"]["timeline_gaps"], 0, "{v}");
    assert!(!stderr(&o).contains("missing frame slot"), "{}", stderr(&o));
    assert_eq!(frame_times(&out).len(), 25);
}
