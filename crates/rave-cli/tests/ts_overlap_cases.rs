//! MPEG-TS parts joined with their clocks overlapping by less than a restart: the second
//! part's clock goes on from the first's picture while the first's sound ran a packet
//! longer and the second's starts with an AAC encoder's priming, or its B-frames are decoded
//! before the first's last frame is shown; FFmpeg's concat demuxer writing MPEG-TS. Found by
//! a sweep of joined files: every overlap from 0 to 0.15 s was refused as damaged (exit 3,
//! "a packet's timestamp leaps 0.051 s back ... it is damaged", "2 duplicated frames
//! dropped"), and `--allow-corrupt` lost audio packets or frames of good parts.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A 96x64 MPEG-TS part at `dir/name`: three seconds of picture at 25 fps (`bframes`
/// B-frames) and of 48 kHz AAC, its clock starting `offset` seconds in.
fn part(dir: &Path, name: &str, bframes: &str, offset: &str) -> PathBuf {
    let path = dir.join(name);
    lavfi_clip(
        &path,
        &[
            "testsrc2=size=96x64:rate=25:duration=3",
            "sine=sample_rate=48000:duration=3",
        ],
        &[
            "-c:v",
            "libx264",
            "-bf",
            bframes,
            "-g",
            "25",
            "-c:a",
            "aac",
            "-output_ts_offset",
            offset,
        ],
    );
    path
}

/// That `out`, upscaled from `input` by `o`, is complete: exit 0, no damage said, every
/// frame and audio packet of `input`, each stream's times going forward.
fn assert_complete(o: &std::process::Output, input: &Path, out: &Path, what: &str) {
    assert_exit(o, 0);
    let err = stderr(o);
    assert!(!err.contains("damaged"), "{what}: {err}");
    assert_eq!(counted_frames(out), counted_frames(input), "{what}");
    assert_eq!(
        packet_count(out, "a:0"),
        packet_count(input, "a:0"),
        "{what}"
    );
    for select in ["v:0", "a:0"] {
        let times = sorted_packet_times(out, select, &[]);
        let distinct = times.windows(2).all(|w| w[1] > w[0]);
        assert!(distinct, "{what}: {select} {times:?}");
    }
}

/// Two parts, the second's clock starting where the first's picture ends or 0.08 or
/// 0.16 s before, with and without B-frames: every frame and packet kept (exit 0), the
/// step back said, and the second part's sound within 60 ms of where it plays against its
/// picture in the part (EBU R37's bound for late sound): each stream is moved on by its
/// own overlap, and the first part's sound ran 8 ms past its picture, the second's
/// priming starts 21 ms before its picture; where the picture does not step back (no
/// B-frames, the clock going on from the first's picture), the sound alone moves, 51 ms.
#[test]
fn parts_whose_clocks_overlap_a_little_keep_every_packet() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    for bframes in ["0", "3"] {
        let first = part(dir.path(), "first.ts", bframes, "0");
        for offset in ["3", "2.92", "2.84"] {
            let what = format!("{bframes} B-frames, second part at {offset} s");
            let second = part(dir.path(), "second.ts", bframes, offset);
            let input = dir.path().join("joined.ts");
            let bytes = [
                std::fs::read(&first).unwrap(),
                std::fs::read(&second).unwrap(),
            ];
            std::fs::write(&input, bytes.concat()).unwrap();
            let out = dir.path().join("out.mkv");
            let o = upscale(&input, &out, &model, &["--overwrite"]);
            assert_complete(&o, &input, &out, &what);
            let err = stderr(&o);
            let said = err.contains("step back into their own last packets")
                || err.contains("timestamps restart 1 time(s)");
            assert!(said, "{what}: {err}");
            assert_second_part_in_sync(&out, (&first, 75), &second, (0.06, &what));
        }
    }
}

/// Three MP4 parts (the first two with B-frames) joined by FFmpeg's concat demuxer into
/// MPEG-TS, where one AAC packet of the second part starts 8 ms before the first part's
/// last: every frame and packet kept, exit 0. (Refused, exit 3, "1 audio/subtitle packet
/// unstorable"; the same join written as Matroska was accepted.)
#[test]
fn a_concat_of_parts_written_as_ts_keeps_every_packet() {
    let dir = scratch();
    let mp4 = |name: &str, seconds: &str, hz: &str, bframes: &str| {
        let path = dir.path().join(name);
        let video = format!("testsrc2=size=96x64:rate=25:duration={seconds}");
        let sound = format!("sine=f={hz}:sample_rate=48000:duration={seconds}");
        let codecs = ["-c:v", "libx264", "-bf", bframes, "-g", "25", "-c:a", "aac"];
        lavfi_clip(&path, &[&video, &sound], &codecs);
        path
    };
    let parts = [
        mp4("p1.mp4", "3", "440", "3"),
        mp4("p2.mp4", "2.5", "660", "3"),
        mp4("p3.mp4", "3.3", "440", "0"),
    ];
    let input = dir.path().join("concat.ts");
    concat_copy(
        &parts.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &input,
    );
    let out = dir.path().join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_complete(&o, &input, &out, "concat");
}
