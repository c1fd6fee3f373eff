//! MPEG-TS captures joined (`cat capture1.ts capture2.ts`) where the second starts inside
//! a picture's PES, or with tables of a recorder's own, or holds no keyframe at all. FFmpeg
//! appended the second's first transport packets (the rest of a picture) to the first's
//! last picture: MPEG-2 decoded their slices into its rows (exit 3, "end mismatch"). A
//! recorder's tables counting from 0, its picture's and sound's counters not, read as the
//! packets lost at a new stream's start (exit 3, "Continuity check failed"). A part without
//! any keyframe was skipped whole and said nowhere (exit 0, its frames gone).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Bytes of one transport packet.
const TS: usize = 188;
/// The PIDs FFmpeg's muxer gives the PMT, the video and the audio.
const PMT: u16 = 0x1000;
const VIDEO: u16 = 0x100;

fn pid(p: &[u8]) -> u16 {
    u16::from(p[1] & 0x1F) << 8 | u16::from(p[2])
}

/// The continuity counter of transport packet `p`, where it carries a payload.
fn counter(p: &[u8]) -> Option<u8> {
    (p[3] & 0x10 != 0).then_some(p[3] & 0x0F)
}

/// A 6-s recording of `video` in `dir` (`common::ts_recording`); its bytes.
fn clip(dir: &Path, name: &str, video: &str, codec: &[&str], offset: &str) -> Vec<u8> {
    ts_recording(&dir.join(name), video, codec, offset)
}

/// `data` with the counters of `pid`'s packets renumbered from `from` on.
fn renumbered(data: &[u8], pid_of: u16, from: u8) -> Vec<u8> {
    let mut out = data.to_vec();
    let mut next = from;
    for p in out.chunks_mut(TS).filter(|p| pid(p) == pid_of) {
        if counter(p).is_some() {
            p[3] = (p[3] & 0xF0) | next;
            next = (next + 1) % 16;
        }
    }
    out
}

/// The counter of the video's last transport packet in `data`.
fn last_video_counter(data: &[u8]) -> u8 {
    (data.chunks(TS).filter(|p| pid(p) == VIDEO))
        .filter_map(counter)
        .next_back()
        .unwrap()
}

/// Whether transport packet `p` is of the video, inside a PES (none starts in it), its
/// counter breaking from `last` (neither the next nor the same: a packet sent twice).
fn breaks_inside_a_picture(p: &[u8], last: u8) -> bool {
    pid(p) == VIDEO
        && p[1] & 0x40 == 0
        && counter(p).is_some_and(|c| c != (last + 1) % 16 && c != last)
}

/// Upscale `input`: its frames and audio packets in the output, and its report.
fn upscaled(input: &Path, extra: &[&str]) -> (std::process::Output, usize, usize) {
    let out = input.with_extension("mkv");
    let mut args = vec!["--overwrite", "--json"];
    args.extend_from_slice(extra);
    let o = upscale(input, &out, &fixture("nearest_x2.onnx"), &args);
    match o.status.code() {
        Some(0) => {
            let frames = frame_times(&out).len();
            (o, frames, packet_count(&out, "a:0"))
        }
        _ => (o, 0, 0),
    }
}

/// Join `first` and the bytes `second`, and check the join upscales whole: exit 0, no
/// damage, every frame and audio packet each gives alone.
fn assert_joined_whole(dir: &Path, first: &Path, second: &[u8], what: &str) {
    let second_path = dir.join("second.ts");
    std::fs::write(&second_path, second).unwrap();
    let (o, a_frames, a_audio) = upscaled(first, &[]);
    assert_exit(&o, 0);
    let (o, b_frames, b_audio) = upscaled(&second_path, &[]);
    assert_exit(&o, 0);
    let joined = dir.join("joined.ts");
    cat_files(&[first, &second_path], &joined);
    let (o, frames, audio) = upscaled(&joined, &[]);
    assert!(
        o.status.code() == Some(0),
        "{what}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let damage = &json_report(&o)["input_damage"];
    assert_eq!(
        damage["frames_damaged"].as_u64(),
        Some(0),
        "{what}: {damage}"
    );
    assert_eq!(frames, a_frames + b_frames, "{what}: frames");
    assert_eq!(audio, a_audio + b_audio, "{what}: audio packets");
}

/// The first capture: the clip from the transport packet 21 % into it.
fn first_capture(dir: &Path, codec: &[&str]) -> PathBuf {
    let whole = clip(dir, "whole-a.ts", "testsrc2", codec, "100");
    let path = dir.join("first.ts");
    std::fs::write(&path, &whole[whole.len() / TS * 21 / 100 * TS..]).unwrap();
    path
}

/// MPEG-2 and HEVC captures, the second cut inside a picture's PES at several places
/// (where the video's counter breaks, as it does fifteen times in sixteen): both whole.
#[test]
fn captures_joined_inside_a_picture_keep_the_picture_before_whole() {
    let dir = scratch();
    let codecs: [(&str, &[&str]); 2] = [
        ("mpeg2", &["-c:v", "mpeg2video", "-bf", "2", "-g", "24"]),
        ("hevc", HEVC_OPEN_GOP),
    ];
    for (what, codec) in codecs {
        let first = first_capture(dir.path(), codec);
        let last = last_video_counter(&std::fs::read(&first).unwrap());
        let b = clip(dir.path(), "whole-b.ts", "mandelbrot", codec, "5000");
        let packets = b.len() / TS;
        for percent in [10, 30, 45, 59, 70] {
            // The first packet inside a picture's PES from there on whose counter breaks
            // from the first capture's last.
            let cut = (packets * percent / 100..packets)
                .map(|k| k * TS)
                .find(|&at| breaks_inside_a_picture(&b[at..at + TS], last))
                .unwrap();
            assert_joined_whole(dir.path(), &first, &b[cut..], &format!("{what} {percent}%"));
        }
    }
}

/// A recorder's file: tables of its own (PAT, PMT) counting from 0 at its start, the
/// broadcast's picture and sound after them with their counters as they came; and a
/// capture cut before its tables, whose counters come to 0 by chance after its picture's
/// and sound's broke. Joined to a capture, each is whole.
#[test]
fn parts_whose_tables_count_from_zero_and_streams_do_not_are_whole() {
    let dir = scratch();
    let codec = ["-c:v", "libx264", "-bf", "2", "-g", "25"];
    let first = first_capture(dir.path(), &codec);
    let b = clip(dir.path(), "whole-b.ts", "mandelbrot", &codec, "5000");
    let packets = b.len() / TS;
    let starts = |at: usize, of: u16| pid(&b[at..]) == of && b[at + 1] & 0x40 != 0;
    // The recorder's: its tables, then the broadcast from a picture's PES on.
    let tables: Vec<u8> = [0, PMT]
        .iter()
        .flat_map(|&t| {
            let at = (0..packets)
                .map(|k| k * TS)
                .find(|&at| starts(at, t))
                .unwrap();
            b[at..at + TS].to_vec()
        })
        .collect();
    let from = (packets * 40 / 100..packets)
        .map(|k| k * TS)
        .find(|&at| starts(at, VIDEO) && counter(&b[at..]) != Some(0))
        .unwrap();
    let mut recorder = [&tables[..], &b[from..]].concat();
    for table in [0, PMT] {
        recorder = renumbered(&recorder, table, 0);
    }
    assert_joined_whole(dir.path(), &first, &recorder, "a recorder's part");
    // The capture cut inside a picture, before its tables.
    let last = last_video_counter(&std::fs::read(&first).unwrap());
    let cut = (packets * 40 / 100..packets)
        .map(|k| k * TS)
        .find(|&at| breaks_inside_a_picture(&b[at..at + TS], last))
        .unwrap();
    let mut capture = b[cut..].to_vec();
    for table in [0, PMT] {
        capture = renumbered(&capture, table, 0);
    }
    assert_joined_whole(dir.path(), &first, &capture, "tables at 0 by chance");
}

/// A capture joined on that holds no keyframe (cut after its last one): none of its
/// pictures can be decoded. Refused, saying so (exit 3); with --allow-corrupt the report
/// counts its frames missing. (They were skipped and said nowhere: exit 0.)
#[test]
fn a_joined_part_without_a_keyframe_is_missing_not_lost() {
    let dir = scratch();
    let codec = ["-c:v", "libx264", "-bf", "2", "-g", "50"];
    let first = first_capture(dir.path(), &codec);
    let b = clip(dir.path(), "whole-b.ts", "mandelbrot", &codec, "5000");
    // Past the last keyframe (at 4 s of 6), mid-picture.
    let second = dir.path().join("second.ts");
    std::fs::write(&second, &b[b.len() / TS * 85 / 100 * TS..]).unwrap();
    let pictures = packet_count(&second, "v:0");
    assert_exit(&upscaled(&second, &[]).0, 3);
    let joined = dir.path().join("joined.ts");
    cat_files(&[&first, &second], &joined);
    let (o, ..) = upscaled(&joined, &[]);
    assert_exit(&o, 3);
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(said.contains("holds no video keyframe"), "{said}");
    let (_, a_frames, _) = upscaled(&first, &[]);
    let (o, frames, _) = upscaled(&joined, &["--allow-corrupt"]);
    assert_exit(&o, 0);
    let damage = &json_report(&o)["input_damage"];
    let missing = damage["frames_missing"].as_u64().unwrap() as usize;
    assert!(missing >= pictures, "{missing} < {pictures}: {damage}");
    assert_eq!(frames, a_frames);
}

/// A join whose first capture holds no keyframe (cut after its last one): its frames are
/// the file's before its first keyframe, skipped and said; the second capture's are all
/// kept. (Its first keyframe was taken for the part's alone: the reading still waited
/// for one of its own, and skipped the second's frames after it, 48 of 100, exit 0.)
#[test]
fn a_first_part_without_a_keyframe_costs_the_next_none_of_its_frames() {
    let dir = scratch();
    let codec = ["-c:v", "libx264", "-bf", "3", "-g", "50"];
    let a = clip(dir.path(), "whole-a.ts", "testsrc2", &codec, "100");
    let first = dir.path().join("first.ts");
    std::fs::write(&first, &a[a.len() / TS * 88 / 100 * TS..]).unwrap();
    assert_exit(&upscaled(&first, &[]).0, 3);
    let b = clip(dir.path(), "whole-b.ts", "mandelbrot", &codec, "5000");
    let second = dir.path().join("second.ts");
    std::fs::write(&second, &b[b.len() / TS * 16 / 100 * TS..]).unwrap();
    let (o, b_frames, b_audio) = upscaled(&second, &[]);
    assert_exit(&o, 0);
    let joined = dir.path().join("joined.ts");
    cat_files(&[&first, &second], &joined);
    let (o, frames, audio) = upscaled(&joined, &[]);
    assert_exit(&o, 0);
    let damage = &json_report(&o)["input_damage"];
    let skipped = damage["frames_before_first_keyframe"].as_u64().unwrap() as usize;
    assert_eq!(skipped, packet_count(&first, "v:0"), "{damage}");
    assert_eq!(frames, b_frames, "{damage}");
    assert!(audio >= b_audio, "{audio} < {b_audio}");
}

/// Captures joined whose sound is coded otherwise on the same PID (AC-3 then MP2, AAC then
/// MP2): FFmpeg reads the second's with the first's parser, which drops it without a word.
/// Refused, the codec change said first (exit 3); with `--allow-corrupt`, every frame on
/// one timeline. (Exit 0, "every frame and packet kept", the second capture's sound gone;
/// then, AAC first, a timing problem said first; AC-3 first, the part after the join read
/// as 4896 s later: "122400 video frames missing", and an output of that length.)
#[test]
fn captures_joined_with_their_sound_coded_otherwise_are_refused() {
    let dir = scratch();
    let codec = ["-c:v", "libx264", "-bf", "2", "-g", "25"];
    let with_audio = |name: &str, audio: &str, offset: &str| {
        let path = dir.path().join(name);
        lavfi_clip(
            &path,
            &[
                "testsrc2=size=160x90:rate=25",
                "sine=frequency=440:sample_rate=48000",
            ],
            &[
                &["-t", "4"][..],
                &codec,
                &["-c:a", audio, "-output_ts_offset", offset],
            ]
            .concat(),
        );
        path
    };
    let second = with_audio("mp2.ts", "mp2", "5000");
    for first_audio in ["ac3", "aac"] {
        let first = with_audio(&format!("{first_audio}.ts"), first_audio, "100");
        let joined = dir.path().join("joined.ts");
        cat_files(&[&first, &second], &joined);
        let out = dir.path().join("out.mkv");
        let model = fixture("nearest_x2.onnx");
        let o = upscale(&joined, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        let said = stderr(&o);
        assert!(
            said.contains("first problem: transport PID 0x101 (stream #1) changes codec"),
            "{first_audio}: {said}"
        );
        assert!(
            !said.contains("video frames missing"),
            "{first_audio}: {said}"
        );
        let o = upscale(&joined, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        let times = frame_times(&out);
        assert_eq!(
            times.len(),
            packet_count(&first, "v:0") + packet_count(&second, "v:0"),
            "{first_audio}"
        );
        let last: f64 = times.last().unwrap().parse().unwrap();
        assert!(last < 8.5, "{first_audio}: the last frame at {last} s");
    }
}

/// Three captures joined, the middle one under two seconds (fewer packet reads than a
/// join's breaks are looked for around it): each join's counter breaks are its own, and
/// every frame and audio packet of each capture is kept. (The second join's were held
/// against the first, which had forgiven its PIDs already: exit 3, "Continuity check
/// failed".)
#[test]
fn three_captures_joined_around_a_short_one_are_whole() {
    let dir = scratch();
    let codec = ["-c:v", "libx264", "-bf", "2", "-g", "25"];
    let mut parts = Vec::new();
    for (k, (video, offset, percent)) in [
        ("testsrc2", "100", 12),
        ("mandelbrot", "5000", 70),
        ("cellauto", "100", 16),
    ]
    .into_iter()
    .enumerate()
    {
        let whole = clip(dir.path(), &format!("whole{k}.ts"), video, &codec, offset);
        let part = dir.path().join(format!("part{k}.ts"));
        std::fs::write(&part, &whole[whole.len() / TS * percent / 100 * TS..]).unwrap();
        parts.push(part);
    }
    let (mut frames, mut audio) = (0, 0);
    for part in &parts {
        let (o, f, a) = upscaled(part, &[]);
        assert_exit(&o, 0);
        (frames, audio) = (frames + f, audio + a);
    }
    let joined = dir.path().join("joined.ts");
    let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    cat_files(&refs, &joined);
    let (o, f, a) = upscaled(&joined, &[]);
    assert!(o.status.code() == Some(0), "{}", stdout(&o));
    assert_eq!((f, a), (frames, audio));
}
