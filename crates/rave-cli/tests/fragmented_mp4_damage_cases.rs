//! Targeted damage of fragmented MP4 files, beside the corpus run (damage_corpus.rs): bytes
//! lost inside a fragment break the chain of boxes, and FFmpeg reads nothing after it; the
//! fragment index at the end of the file (`mfra`) still lists the fragments past the break.

mod common;

use common::*;

/// Where each top-level box of `data` starts, with its type.
fn top_level_boxes(data: &[u8]) -> Vec<(usize, [u8; 4])> {
    let mut at = 0;
    let mut boxes = Vec::new();
    while at + 8 <= data.len() {
        let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        boxes.push((at, data[at + 4..at + 8].try_into().unwrap()));
        if size < 8 {
            break;
        }
        at += size;
    }
    boxes
}

/// Seven bytes lost at the end of the first fragment: FFmpeg stops at the second, two
/// thirds of the file unread. The run said "0 frames missing" with 25 of 75
/// frames out; the index's fragments past the break now count: refused, and with
/// --allow-corrupt at least the frames up to the last listed fragment are counted missing.
#[test]
fn fragments_lost_past_a_break_are_counted_from_the_index() {
    let dir = scratch();
    let clean = dir.path().join("clean.mp4");
    lavfi_clip(
        &clean,
        &["testsrc2=size=160x96:rate=25:duration=3", "sine=duration=3"],
        &[
            "-c:v",
            "libx264",
            "-g",
            "25",
            "-c:a",
            "aac",
            "-movflags",
            "frag_keyframe+empty_moov",
        ],
    );
    let data = std::fs::read(&clean).unwrap();
    let boxes = top_level_boxes(&data);
    assert!(boxes.iter().any(|(_, k)| k == b"mfra"), "{boxes:?}");
    // The last bytes of the first fragment's media (its last audio packet): the first
    // fragment's video reads whole, the chain breaks at the second fragment.
    let (moof, _) = *boxes
        .iter()
        .filter(|(_, k)| k == b"moof")
        .nth(1)
        .expect("a second fragment");
    let cut = moof - 3;
    let damaged = dir.path().join("damaged.mp4");
    std::fs::write(&damaged, [&data[..cut], &data[cut + 7..]].concat()).unwrap();

    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let first = v["error"]["damage"]["first_problem"].to_string();
    assert!(
        first.contains(
            "the fragment index at the end of the file lists 2 movie fragment(s) past it"
        ),
        "{v}"
    );
    let o = upscale(
        &damaged,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--json", "--allow-corrupt"],
    );
    assert_exit(&o, 0);
    let v = json_report(&o);
    let (out_frames, missing) = (
        v["frames_out"].as_u64().unwrap(),
        v["input_damage"]["frames_missing"].as_u64().unwrap(),
    );
    assert_eq!(out_frames, 25, "{v}");
    // The last listed fragment starts at 2 s: 25 frames from 1 s to it, and its own.
    assert!(missing >= 26, "{v}");
    assert!(out_frames + missing <= 75, "{v}");
}
