//! An MPEG-TS made of segments, one written twice in a row (an HLS downloader that fetched
//! a segment again and joined what it fetched): the repeat's timestamps go back to where
//! the segment's did, so it was taken for a join whose clocks overlap (or, for a segment
//! longer than a second, for a restart), kept, and the segment played twice with exit 0.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The segments (`seconds` long each) of a 4-s 96x64 H.264 clip (a keyframe every
/// `seconds`) with 48 kHz AAC, each its own transport stream as a segment muxer writes
/// them, in `dir`/seg; and the clip as one MPEG-TS.
fn segments(dir: &Path, seconds: &str, frames: &str) -> (PathBuf, Vec<PathBuf>) {
    let clip = dir.join("clip.ts");
    lavfi_clip(
        &clip,
        &[
            "testsrc2=size=96x64:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &[
            "-c:v",
            "libx264",
            "-bf",
            "0",
            "-g",
            frames,
            "-sc_threshold",
            "0",
            "-c:a",
            "aac",
        ],
    );
    let seg = dir.join("seg");
    std::fs::create_dir_all(&seg).unwrap();
    let pattern = seg.join("s%03d.ts");
    ffmpeg(&[
        "-i",
        clip.to_str().unwrap(),
        "-c",
        "copy",
        "-f",
        "segment",
        "-segment_time",
        seconds,
        "-reset_timestamps",
        "0",
        pattern.to_str().unwrap(),
    ]);
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&seg)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    assert!(parts.len() >= 2, "{} segments", parts.len());
    (clip, parts)
}

/// One part of a join: the segment at an index, whole or its first so many transport
/// packets (a download cut short).
type Copy = (usize, Option<usize>);

/// The segments `order` names, joined end to end into `out`.
fn joined_in_order(parts: &[PathBuf], order: &[Copy], out: &Path) {
    let mut bytes = Vec::new();
    for &(i, cut) in order {
        let data = std::fs::read(&parts[i]).unwrap();
        let end = cut.map_or(data.len(), |n| (n * 188).min(data.len()));
        bytes.extend_from_slice(&data[..end]);
    }
    std::fs::write(out, bytes).unwrap();
}

/// The `n` segments once each, in order, with `extra` put in before the segment `before`.
fn with_extra(n: usize, before: usize, extra: &[Copy]) -> Vec<Copy> {
    let mut order: Vec<Copy> = (0..n).map(|i| (i, None)).collect();
    order.splice(before..before, extra.iter().copied());
    order
}

/// Segments of 0.4 s, one written twice or three times, the last one twice, two in a row
/// written again as a block, one written cut short (30 transport packets) then whole (a
/// download retried); segments of 2 s (the repeat going back further than a join's
/// overlap), one written twice: refused as damage, the repeat said; with --allow-corrupt
/// the frames and audio packets of the segments joined once each. The segments joined
/// once each are upscaled as the clip is, nothing said. (Each was kept, the segment
/// played twice, exit 0; the last segment's repeat, the block and the cut copy were missed
/// by the first check of the bytes.)
#[test]
fn a_segment_written_twice_in_a_row_is_dropped_as_duplicated_data() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    // What is written again, before which segment.
    let cases: [(&str, &str, &str, usize, Vec<Copy>); 6] = [
        ("twice", "0.4", "10", 4, vec![(4, None)]),
        ("three times", "0.4", "10", 2, vec![(2, None), (2, None)]),
        ("the last twice", "0.4", "10", 10, vec![(9, None)]),
        ("a block of two", "0.4", "10", 4, vec![(2, None), (3, None)]),
        ("cut short, then whole", "0.4", "10", 5, vec![(5, Some(30))]),
        ("2-s segment twice", "2", "50", 0, vec![(0, None)]),
    ];
    for (what, seconds, frames, before, extra) in cases {
        let (clip, parts) = segments(dir.path(), seconds, frames);
        let want = dir.path().join("want.mkv");
        let o = upscale(&clip, &want, &model, &["--overwrite"]);
        assert_exit(&o, 0);

        let once = dir.path().join("once.ts");
        joined_in_order(&parts, &with_extra(parts.len(), 0, &[]), &once);
        let out = dir.path().join("once.mkv");
        let o = upscale(&once, &out, &model, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("repeats"), "{what}: {}", stderr(&o));
        assert_eq!(frame_times(&out), frame_times(&want), "{what}");

        let repeat = dir.path().join("repeat.ts");
        let order = with_extra(parts.len(), before, &extra);
        joined_in_order(&parts, &order, &repeat);
        let damage = &refused_then_dropped(&repeat, &want, what);
        assert!(
            damage["frames_dropped"].as_u64().unwrap() > 0,
            "{what}: {damage}"
        );
        std::fs::remove_dir_all(dir.path().join("seg")).unwrap();
    }
}

/// `repeat` (holding a stretch written twice) refused as repeating itself, no restart said;
/// with --allow-corrupt the same frames and audio as `want` (the clip upscaled). Returns
/// the report's `input_damage`.
fn refused_then_dropped(repeat: &Path, want: &Path, what: &str) -> serde_json::Value {
    let model = fixture("nearest_x2.onnx");
    let out = repeat.with_extension("mkv");
    let o = upscale(repeat, &out, &model, &["--overwrite"]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("the input repeats itself") && !err.contains("restart"),
        "{what}: {err}"
    );
    let allow = ["--overwrite", "--allow-corrupt", "--json"];
    let o = upscale(repeat, &out, &model, &allow);
    assert_exit(&o, 0);
    assert_eq!(frame_times(&out), frame_times(want), "{what}");
    assert_same_audio(&out, want, what);
    json_report(&o)["input_damage"].clone()
}

/// `path`'s transport packets renumbered: each PID's continuity counter counting on through
/// the whole file (as a remux writes it), so no segment shows a seam in the bytes.
fn renumbered_counters(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len() % 188, 0);
    let mut counters = std::collections::HashMap::<u16, u8>::new();
    for packet in bytes.chunks_mut(188) {
        assert_eq!(packet[0], 0x47);
        let pid = (u16::from(packet[1] & 0x1f) << 8) | u16::from(packet[2]);
        let has_payload = packet[3] & 0x10 != 0;
        let next = counters.entry(pid).or_insert(0);
        let cc = match has_payload {
            true => *next,
            false => next.wrapping_sub(1) & 0x0f,
        };
        packet[3] = (packet[3] & 0xf0) | cc;
        if has_payload {
            *next = (*next + 1) & 0x0f;
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// A segment written again later than right after itself (three segments on: an HLS
/// downloader that fetched it again after the playlist moved back), and a segment written
/// twice in a row in a file whose continuity counters were renumbered (no seam shows in
/// the bytes), and both: each is refused as damage, the repeat said; with
/// --allow-corrupt the output is the clip's, every frame and audio packet once. (Each was
/// an exit 0 with the segment's 0.4 s played twice: the timestamps going back were taken
/// for parts joined.)
#[test]
fn a_segment_written_again_later_or_renumbered_is_dropped_as_duplicated_data() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    let (clip, parts) = segments(dir.path(), "0.4", "10");
    let want = dir.path().join("want.mkv");
    assert_exit(&upscale(&clip, &want, &model, &["--overwrite"]), 0);
    // What is written again, before which segment; whether the counters are renumbered.
    let end = parts.len();
    let cases: [(&str, usize, Vec<Copy>, bool); 6] = [
        ("written again three segments on", 6, vec![(3, None)], false),
        ("written again at the end", end, vec![(3, None)], false),
        (
            "the last twice, renumbered",
            end,
            vec![(end - 1, None)],
            true,
        ),
        ("twice in a row, renumbered", 4, vec![(3, None)], true),
        (
            "again three segments on, renumbered",
            6,
            vec![(3, None)],
            true,
        ),
        (
            "two again two segments on",
            7,
            vec![(3, None), (4, None)],
            false,
        ),
    ];
    for (what, before, extra, renumber) in cases {
        let repeat = dir.path().join("repeat.ts");
        joined_in_order(&parts, &with_extra(parts.len(), before, &extra), &repeat);
        if renumber {
            renumbered_counters(&repeat);
        }
        let damage = &refused_then_dropped(&repeat, &want, what);
        assert_eq!(
            damage["frames_dropped"].as_u64(),
            Some(10 * extra.len() as u64),
            "{what}: {damage}"
        );
    }
    // Written again, then two segments lost (more than a second): the copy dropped and
    // the loss counted (it was an exit 0, the copy played twice, the loss warned as gaps).
    let mut order = with_extra(parts.len(), 6, &[(5, None)]);
    order.retain(|&(i, _)| i != 6 && i != 7);
    let lost = dir.path().join("lost.ts");
    joined_in_order(&parts, &order, &lost);
    renumbered_counters(&lost);
    let out = dir.path().join("lost.mkv");
    let o = upscale(&lost, &out, &model, &["--overwrite"]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("the input repeats itself"),
        "{}",
        stderr(&o)
    );
    let o = upscale(&lost, &out, &model, &["--overwrite", "--allow-corrupt"]);
    assert_exit(&o, 0);
    assert_eq!(frame_times(&out).len(), frame_times(&want).len() - 20);
    // Renumbered, each segment once: the clip, nothing said.
    let once = dir.path().join("once.ts");
    joined_in_order(&parts, &with_extra(parts.len(), 0, &[]), &once);
    renumbered_counters(&once);
    let out = dir.path().join("once.mkv");
    let o = upscale(&once, &out, &model, &["--overwrite"]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("repeats"), "{}", stderr(&o));
    assert_eq!(frame_times(&out), frame_times(&want));
}

/// A clip joined on both sides of another (`cat intro.ts main.ts intro.ts`: the same
/// intro twice, on purpose), or between two others, is parts joined, not data written
/// twice: the second intro's packets are the first's again, but the file does not go on
/// from before them (it ends, or a part whose clock does not go on from the main part's
/// follows). Every frame of the parts is upscaled, exit 0.
#[test]
fn the_same_clip_joined_again_after_another_is_kept() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    // Three clips of their own picture and tone, `seconds` long each.
    let clip = |name: &str, video: &str, tone: &str, seconds: &str| {
        let path = dir.path().join(name);
        let sources = [
            format!("{video}=size=96x64:rate=25"),
            format!("sine={tone}"),
        ];
        let sources = [sources[0].as_str(), sources[1].as_str()];
        let args = ["-t", seconds, "-c:v", "libx264", "-bf", "0", "-c:a", "aac"];
        lavfi_clip(&path, &sources, &args);
        path
    };
    let intro = clip(
        "intro.ts",
        "testsrc2",
        "frequency=440:sample_rate=48000",
        "1",
    );
    let main = clip(
        "main.ts",
        "mandelbrot",
        "frequency=660:sample_rate=48000",
        "2",
    );
    let outro = clip(
        "outro.ts",
        "smptebars",
        "frequency=220:sample_rate=48000",
        "1",
    );
    let joined = dir.path().join("joined.ts");
    for (parts, frames) in [
        (vec![intro.as_path(), &main, &intro], 100),
        (vec![intro.as_path(), &main, &intro, &outro], 125),
    ] {
        cat_files(&parts, &joined);
        let out = dir.path().join("joined.mkv");
        let o = upscale(&joined, &out, &model, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("repeats"), "{}", stderr(&o));
        assert_eq!(frame_times(&out).len(), frames);
        let want: usize = parts.iter().map(|p| packet_count(p, "a:0")).sum();
        assert_eq!(packet_count(&out, "a:0"), want);
    }
}

/// An advert aired twice in a recording whose clock goes on around it (the recording's
/// segments, the advert, more segments, the advert again, the rest): the advert's second
/// airing repeats its first, and the recording goes on after it, but each airing started
/// a part of its own (its clock is not the recording's): parts joined, every frame kept,
/// exit 0. (It was refused as a segment written again.)
#[test]
fn an_advert_aired_twice_in_a_recording_is_kept() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    let (clip, parts) = segments(dir.path(), "0.4", "10");
    let advert = dir.path().join("advert.ts");
    let sources = [
        "mandelbrot=size=96x64:rate=25",
        "sine=frequency=660:sample_rate=48000",
    ];
    let args = ["-t", "1", "-c:v", "libx264", "-bf", "0", "-c:a", "aac"];
    lavfi_clip(&advert, &sources, &args);
    let mut order: Vec<&Path> = parts.iter().map(|p| p.as_path()).collect();
    order.insert(7, &advert);
    order.insert(3, &advert);
    let aired = dir.path().join("aired.ts");
    cat_files(&order, &aired);
    renumbered_counters(&aired);
    let out = dir.path().join("aired.mkv");
    let o = upscale(&aired, &out, &model, &["--overwrite"]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("repeats"), "{}", stderr(&o));
    assert_eq!(frame_times(&out).len(), frame_times(&clip).len() + 50);
}

/// A segment's copy cut off inside a transport packet, then written whole (a download
/// retried that kept a partial packet): refused as a packet cut short inside the file, said
/// near where it is (it was "the file is truncated: it ends 100 bytes into a 188-byte
/// transport packet", about a file whose end is whole); with --allow-corrupt every frame is
/// there once, the copy's frames read before dropped.
#[test]
fn a_copy_cut_inside_a_packet_is_said_where_it_is() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    let (clip, parts) = segments(dir.path(), "0.4", "10");
    let mut bytes = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let data = std::fs::read(part).unwrap();
        if i == 5 {
            bytes.extend_from_slice(&data[..30 * 188 + 100]);
        }
        bytes.extend_from_slice(&data);
    }
    let cut = dir.path().join("cut.ts");
    std::fs::write(&cut, bytes).unwrap();
    let out = dir.path().join("cut.mkv");
    let o = upscale(&cut, &out, &model, &["--overwrite"]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("inside the file is cut short near byte") && !err.contains("truncated"),
        "{err}"
    );
    let o = upscale(
        &cut,
        &out,
        &model,
        &["--overwrite", "--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    assert_eq!(frame_times(&out).len(), frame_times(&clip).len());
    let damage = &json_report(&o)["input_damage"];
    assert!(damage["frames_dropped"].as_u64().unwrap() > 0, "{damage}");
}
