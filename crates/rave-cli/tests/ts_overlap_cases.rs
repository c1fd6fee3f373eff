//! MPEG-TS parts joined with their clocks overlapping by less than a restart: the second
//! part's clock goes on from the first's picture while the first's sound ran a packet
//! longer and the second's starts with an AAC encoder's priming, or its B-frames are decoded
//! before the first's last frame is shown; FFmpeg's concat demuxer writing MPEG-TS. Found by
//! a sweep of joined files: every overlap from 0 to 0.15 s was refused as damaged (exit 3,
//! "a packet's timestamp leaps 0.051 s back ... it is damaged", "2 duplicated frames
//! dropped"), and `--allow-corrupt` lost audio packets or frames of good parts.

mod common;
mod corpus;

use common::*;
use std::path::{Path, PathBuf};

/// A 96x64 MPEG-TS part at `dir/name`: `seconds` of picture at 25 fps coded as `video`
/// (codec arguments) and of 48 kHz AAC, its clock starting `offset` seconds in.
fn part(dir: &Path, name: &str, (seconds, offset): (&str, &str), video: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let picture = format!("testsrc2=size=96x64:rate=25:duration={seconds}");
    let sound = format!("sine=sample_rate=48000:duration={seconds}");
    let mut args = video.to_vec();
    args.extend(["-g", "25", "-c:a", "aac", "-output_ts_offset", offset]);
    lavfi_clip(&path, &[&picture, &sound], &args);
    path
}

/// x264 with `bframes` B-frames.
fn x264(bframes: &str) -> [&str; 4] {
    ["-c:v", "libx264", "-bf", bframes]
}

/// `parts` joined byte for byte into `dir/joined.ts`.
fn cat(dir: &Path, parts: &[&Path]) -> PathBuf {
    let path = dir.join("joined.ts");
    cat_files(parts, &path);
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
/// 0.16 s before, with and without B-frames: every frame and packet kept (exit 0), one
/// join said, and the second part's sound where it plays against its picture in the part
/// (within 15 ms): the part starting at the seam of the file's bytes is moved on as a
/// whole, by as much as its sound overlaps (the first part's sound ran 8 ms past its
/// picture, the second's priming starts 21 ms before its picture).
#[test]
fn parts_whose_clocks_overlap_a_little_keep_every_packet() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    for bframes in ["0", "3"] {
        let first = part(dir.path(), "first.ts", ("3", "0"), &x264(bframes));
        for offset in ["3", "2.92", "2.84"] {
            let what = format!("{bframes} B-frames, second part at {offset} s");
            let second = part(dir.path(), "second.ts", ("3", offset), &x264(bframes));
            let input = cat(dir.path(), &[&first, &second]);
            let out = dir.path().join("out.mkv");
            let o = upscale(&input, &out, &model, &["--overwrite"]);
            assert_complete(&o, &input, &out, &what);
            let err = stderr(&o);
            assert!(
                err.contains("timestamps restart 1 time(s)"),
                "{what}: {err}"
            );
            assert_second_part_in_sync(&out, (&first, 75), &second, (0.015, &what));
        }
    }
}

/// Parts coded differently joined so: with B-frames then without (the second's first
/// frames shown when the first's last two are), without then with (the second's first
/// frames decoded before the first's last), HEVC with B-frames (the second's first frame
/// starting with the same parameter sets as the first's keyframes). Every frame and packet
/// kept, no frame slot said missing, the second part in sync. (The first and last were
/// refused, "2 duplicated frames dropped"; the second left a 0.12 s hole in the picture
/// and said the input had it.)
#[test]
fn joined_parts_coded_differently_keep_every_frame() {
    let dir = scratch();
    let model = fixture("nearest_x2.onnx");
    let hevc = ["-c:v", "libx265", "-x265-params", "log-level=error"];
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("B-frames, then none", &x264("3"), &x264("0")),
        ("no B-frames, then some", &x264("0"), &x264("3")),
        ("HEVC with B-frames", &hevc, &hevc),
    ];
    for (what, one, two) in cases {
        let first = part(dir.path(), "first.ts", ("2", "0"), one);
        let second = part(dir.path(), "second.ts", ("2", "2"), two);
        let input = cat(dir.path(), &[&first, &second]);
        let out = dir.path().join("out.mkv");
        let o = upscale(&input, &out, &model, &["--overwrite"]);
        assert_complete(&o, &input, &out, what);
        assert!(
            !stderr(&o).contains("missing frame"),
            "{what}: {}",
            stderr(&o)
        );
        assert_second_part_in_sync(&out, (&first, 50), &second, (0.015, what));
    }
}

/// Six one-second parts joined, each overlapping the one before by its sound's priming:
/// each part's sound stays where it plays against its picture (within 15 ms). (Moving the
/// sound alone at each join put it 45 ms later each time: 141 ms by the sixth.)
#[test]
fn many_joined_parts_keep_their_sync() {
    let dir = scratch();
    let parts: Vec<PathBuf> = (0..6)
        .map(|k| {
            let name = format!("p{k}.ts");
            part(dir.path(), &name, ("1", &k.to_string()), &x264("0"))
        })
        .collect();
    let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let input = cat(dir.path(), &refs);
    let out = dir.path().join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_complete(&o, &input, &out, "six parts");
    let (video, sound) = (
        sorted_packet_times(&out, "v:0", &[]),
        sorted_packet_times(&out, "a:0", &[]),
    );
    let (mut frames, mut packets) = (0, 0);
    for (k, p) in parts.iter().enumerate() {
        let want = sorted_packet_times(p, "a:0", &[])[0] - sorted_packet_times(p, "v:0", &[])[0];
        let got = sound[packets] - video[frames];
        assert!(
            (got - want).abs() < 0.015,
            "part {k}: {got} s, in the part {want} s"
        );
        frames += 25;
        packets += packet_count(p, "a:0");
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

/// A join whose second part lost its first audio TS packet (the start of its first PES):
/// that PID's counter breaks to 1 at the seam, where every other starts at 0. Refused as
/// damage (exit 3). (The first break of each PID at a seam was forgiven whatever its value:
/// exit 0 "every frame and packet kept", 14 audio packets short.)
#[test]
fn a_packet_lost_at_a_seam_is_damage() {
    let dir = scratch();
    let (data, seam) = joined_bytes(dir.path(), "0", "2.5");
    let audio = corpus::pes_starts(&data, |id| id & 0xE0 == 0xC0);
    let at = *audio.iter().find(|&&at| at > seam).unwrap() / 188 * 188;
    let damaged = dir.path().join("damaged.ts");
    std::fs::write(&damaged, [&data[..at], &data[at + 188..]].concat()).unwrap();
    assert_refused_as_damaged(dir.path(), &damaged, "Continuity check failed");
}

/// A second part written with other transport PIDs on the same PMT PID: FFmpeg lists its
/// streams while opening but cannot read their parameters, so they are left out. Their
/// packets are lost: refused as damage (exit 3), not "complete" with the part missing
/// (exit 0, 75 of 150 frames, "the stream holds no data").
#[test]
fn a_part_whose_streams_cannot_be_read_is_not_dropped_silently() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", ("3", "0"), &x264("2"));
    let mut other = x264("2").to_vec();
    other.extend(["-mpegts_start_pid", "0x200"]);
    let second = part(dir.path(), "second.ts", ("3", "2.3"), &other);
    let input = cat(dir.path(), &[&first, &second]);
    let said = "has packets, but FFmpeg could not read its parameters";
    assert_refused_as_damaged(dir.path(), &input, said);
}

/// Parts written with other transport PIDs joined on (other start PIDs, then other stream
/// IDs): FFmpeg meets the later parts' streams only past its probe. A clear refusal naming
/// them (exit 3), no crash. (An index past the streams known at opening panicked, exit 1.)
#[test]
fn parts_with_other_pids_are_refused_clearly() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", ("3", "0"), &x264("2"));
    let mut other = x264("2").to_vec();
    other.extend([
        "-mpegts_start_pid",
        "0x200",
        "-mpegts_pmt_start_pid",
        "0x1500",
    ]);
    let second = part(dir.path(), "second.ts", ("2", "2.3"), &other);
    let mut ids = x264("2").to_vec();
    ids.extend(["-streamid", "0:0x300", "-streamid", "1:0x280"]);
    let third = part(dir.path(), "third.ts", ("2", "4"), &ids);
    let input = cat(dir.path(), &[&first, &second, &third]);
    assert_refused_as_damaged(dir.path(), &input, "appears only after the start");
}

/// The bytes of two three-second parts (`bframes` B-frames) joined, the second's clock
/// starting `offset` seconds in, and where the second starts in them.
fn joined_bytes(dir: &Path, bframes: &str, offset: &str) -> (Vec<u8>, usize) {
    let first = part(dir, "first.ts", ("3", "0"), &x264(bframes));
    let second = part(dir, "second.ts", ("3", offset), &x264(bframes));
    let data = std::fs::read(cat(dir, &[&first, &second])).unwrap();
    (data, std::fs::metadata(&first).unwrap().len() as usize)
}

/// `input` upscaled into `dir/out.mkv` with nothing else asked: refused as damaged (exit
/// 3), saying `said`.
fn assert_refused_as_damaged(dir: &Path, input: &Path, said: &str) {
    let o = upscale(
        input,
        &dir.join("out.mkv"),
        &fixture("nearest_x2.onnx"),
        &[],
    );
    assert_exit(&o, 3);
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
}

/// The first part's last frame with its PTS 186 s ahead (bit 24) or 0.18 s late (bit 14)
/// where a second part joins on: damage (exit 3); with --allow-corrupt the frame back in
/// its place, every frame and audio packet where the clean join has them. (The join was
/// placed after the damaged time: exit 0 with "4660 missing frame slots" and a 186 s hole,
/// or exit 0 with an audio-gap warning and the second part 0.15 s late.)
#[test]
fn a_damaged_last_frame_before_a_seam_is_damage() {
    let dir = scratch();
    let (data, seam) = joined_bytes(dir.path(), "3", "2.4");
    let model = fixture("nearest_x2.onnx");
    let clean = dir.path().join("clean.ts");
    std::fs::write(&clean, &data).unwrap();
    let want = dir.path().join("clean.mkv");
    assert_exit(&upscale(&clean, &want, &model, &[]), 0);
    let video = corpus::pes_starts(&data, |id| id == 0xE0);
    let last = *video.iter().rfind(|&&at| at < seam).unwrap();
    for bit in [24, 14] {
        let damaged = dir.path().join("damaged.ts");
        std::fs::write(&damaged, corpus::with_pes_pts_bit_flipped(&data, last, bit)).unwrap();
        assert_refused_as_damaged(dir.path(), &damaged, "it is damaged");
        let out = dir.path().join("kept.mkv");
        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        assert_eq!(frame_times(&out), frame_times(&want), "bit {bit}");
        assert_same_audio(&out, &want, &format!("bit {bit}"));
    }
}
