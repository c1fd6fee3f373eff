//! Timestamps damaged by less than the far leaps of flv_damage_cases.rs: one Matroska
//! block, audio or video, whose time is a few seconds or half a second late (a flipped bit
//! in its relative timecode, with no CRC-32 to tell), against a real pause in the sound;
//! the last block of a stream, which no next one can tell.

mod common;
mod corpus;

use common::*;

/// The clean Matroska clip (`four_second_h264_aac`) in `dir`.
fn clean_mkv(dir: &std::path::Path) -> std::path::PathBuf {
    let clean = dir.join("clean.mkv");
    four_second_h264_aac(&clean);
    clean
}

/// One audio block 4096 ms or 512 ms late, the next one back in place: taken as it was,
/// every good packet after it until the sound passed the leap went "backwards" and was
/// dropped (176 packets, 4.1 s of sound, for the 4096 ms bit). Now the one packet is the
/// damage: refused by default, and with --allow-corrupt it is put back between its
/// neighbours, so every audio packet comes out, each at its clean time (to the millisecond).
#[test]
fn an_audio_block_out_of_place_by_seconds_is_put_back_not_the_sound_after_it_dropped() {
    let dir = scratch();
    let clean = clean_mkv(dir.path());
    let data = std::fs::read(&clean).unwrap();
    let model = fixture("nearest_x2.onnx");
    for ext in ["mkv", "mp4"] {
        let want = dir.path().join(format!("clean-out.{ext}"));
        assert_exit(&upscale(&clean, &want, &model, &[]), 0);
        for late_ms in [4096, 512] {
            let damaged = dir.path().join(format!("damaged{late_ms}.mkv"));
            std::fs::write(
                &damaged,
                corpus::with_audio_blocks_moved(&data, 60..61, late_ms),
            )
            .unwrap();
            let out = dir.path().join(format!("late{late_ms}.{ext}"));
            let o = upscale(&damaged, &out, &model, &[]);
            assert_exit(&o, 3);
            assert!(stderr(&o).contains("timestamp leaps"), "{}", stderr(&o));
            assert!(!out.exists());

            let o = upscale(&damaged, &out, &model, &["--allow-corrupt", "--json"]);
            assert_exit(&o, 0);
            let v = json_report(&o);
            assert_eq!(v["input_damage"]["packets_dropped"], 0, "{v}");
            assert_same_audio(&out, &want, &format!("{late_ms} ms late, to {ext}"));
            assert_eq!(counted_frames(&out), 100, "{late_ms} ms late, to {ext}");
        }
    }
}

/// Every audio block from the 60th on a second later: a pause in the sound, not a damaged
/// timestamp (the next packet does not come back). Nothing is put back or dropped.
#[test]
fn a_pause_in_the_sound_is_not_taken_for_a_damaged_timestamp() {
    let dir = scratch();
    let clean = clean_mkv(dir.path());
    let blocks = packet_count(&clean, "a:0");
    let paused = dir.path().join("paused.mkv");
    std::fs::write(
        &paused,
        corpus::with_audio_blocks_moved(&std::fs::read(&clean).unwrap(), 60..blocks, 1000),
    )
    .unwrap();
    let out = dir.path().join("paused-out.mkv");
    let o = upscale(
        &paused,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    let v = json_report(&o);
    assert!(!stderr(&o).contains("timestamp leaps"), "{}", stderr(&o));
    assert_eq!(v["input_damage"]["packets_dropped"], 0, "{v}");
    let (got, input) = (packets(&out, "a:0"), packets(&paused, "a:0"));
    assert_eq!(got.len(), input.len());
    assert_eq!(
        got.iter().zip(&input).find(|(g, i)| g != i),
        None,
        "(out, input)"
    );
}

/// One video block (a B-frame, then a reference frame) 4096 ms or 1024 ms late: taken as
/// it was, the frame was shown seconds late, on top of another (dropped as a duplicate),
/// and its own place was empty (249 frames of 250, the wrong one at the end). Now it is
/// damage: refused by default, and with --allow-corrupt the frame goes back to the one slot
/// its neighbours leave free: every frame out, at its clean time, with its clean picture.
#[test]
fn a_video_block_out_of_place_by_seconds_goes_back_to_its_slot() {
    let dir = scratch();
    let clean = clean_mkv(dir.path());
    let data = std::fs::read(&clean).unwrap();
    let model = fixture("nearest_x2.onnx");
    let want = dir.path().join("clean-out.mkv");
    assert_exit(&upscale(&clean, &want, &model, &[]), 0);
    let (want_times, want_pictures) = (frame_times(&want), decode_rgb(&want));
    for (block, late_ms) in [(60, 4096), (61, 4096), (60, 1024)] {
        let what = format!("block {block}, {late_ms} ms late");
        let damaged = dir.path().join(format!("damaged{block}-{late_ms}.mkv"));
        let moved = corpus::with_blocks_moved(&data, 1, block..block + 1, late_ms);
        std::fs::write(&damaged, moved).unwrap();
        let out = dir.path().join(format!("late{block}-{late_ms}.mkv"));
        let o = upscale(&damaged, &out, &model, &[]);
        assert_exit(&o, 3);
        assert!(
            stderr(&o).contains("timestamp leaps"),
            "{what}: {}",
            stderr(&o)
        );

        let o = upscale(&damaged, &out, &model, &["--allow-corrupt"]);
        assert_exit(&o, 0);
        assert!(stderr(&o).contains("put back"), "{what}: {}", stderr(&o));
        assert_eq!(frame_times(&out), want_times, "{what}");
        assert!(decode_rgb(&out) == want_pictures, "{what}: pictures differ");
    }
}

/// The last audio or video block 4096 ms late: no packet comes after it to tell a damaged
/// timestamp from a pause, and the run finished "complete" with a stream running 4 s past
/// the picture (a frozen last frame, or silence then a packet). The container declares its
/// length: a stream running seconds past it is damage, refused by default.
#[test]
fn a_streams_last_block_out_of_place_runs_past_the_declared_end_and_is_refused() {
    let dir = scratch();
    let clean = clean_mkv(dir.path());
    let data = std::fs::read(&clean).unwrap();
    for (track, select) in [(1u8, "v:0"), (2, "a:0")] {
        let last = packet_count(&clean, select);
        let damaged = dir.path().join(format!("last{track}.mkv"));
        let moved = corpus::with_blocks_moved(&data, track, last - 1..last, 4096);
        std::fs::write(&damaged, moved).unwrap();
        let out = dir.path().join(format!("last{track}-out.mkv"));
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("past the 4.0"), "track {track}: {message}");
        // What the declared length holds is all there: nothing is counted missing (of the
        // sound, no more than its rounding to a packet).
        let damage = &v["error"]["damage"];
        assert_eq!(damage["frames_missing"], 0, "track {track}: {v}");
        let audio = damage["audio_missing_s"].as_f64().unwrap();
        assert!(audio < 0.05, "track {track}: {v}");
        assert!(!out.exists());
    }
}

/// A clean FLV whose timestamps start at 5 s: its header's length counts from its first
/// timestamp, so its streams end 5 s past that length and are no overrun.
#[test]
fn a_clean_flv_starting_late_is_no_overrun() {
    let dir = scratch();
    let late = dir.path().join("late.flv");
    lavfi_clip(
        &late,
        &["testsrc=size=64x48:rate=25:duration=3", "sine=duration=3"],
        &["-c:v", "libx264", "-c:a", "aac", "-output_ts_offset", "5"],
    );
    let out = dir.path().join("late.mkv");
    let o = upscale(&late, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("damaged"), "{}", stderr(&o));
    assert_eq!(counted_frames(&out), 75);
}
