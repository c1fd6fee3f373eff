//! MPEG-TS captures joined end to end (`cat a.ts b.ts`), whose timestamps restart at the
//! join: each part keeps every frame and packet and its own picture-to-sound offset, and one
//! join is one restart. Found by a sweep of joined files: AC-3's last frame of a part, held
//! back by FFmpeg's parser, was moved with the next part and made a 4 s hole (exit 0); a
//! part whose sound starts just before its picture played its sound 0.2 s late; a damaged
//! audio PES just after a join was taken for more restarts (exit 0, sound out of sync).

mod common;
mod corpus;

use common::*;
use std::path::{Path, PathBuf};

/// A 96x64 MPEG-TS part at `dir/name`: `seconds` of picture at 25 fps shown `delay` seconds
/// after the start of `seconds` of 48 kHz sound coded as `audio`.
fn part(dir: &Path, name: &str, seconds: f64, delay: f64, audio: &str) -> PathBuf {
    let path = dir.join(name);
    let mut args = vec!["-itsoffset".to_owned(), delay.to_string()];
    args.extend(part_args(seconds, audio, &path));
    ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
    path
}

/// FFmpeg's arguments for a part of [`part`] at `path`: its inputs, codecs and output. Its
/// file name is its service's: parts made alike are other bytes (the same bytes twice are
/// one segment written twice, `ts_repeat_cases`).
fn part_args(seconds: f64, audio: &str, path: &Path) -> Vec<String> {
    let video = format!("testsrc2=s=96x64:r=25:d={seconds}");
    let sound = format!("sine=f=440:r=48000:d={seconds}");
    let service = format!(
        "service_name={}",
        path.file_name().unwrap().to_str().unwrap()
    );
    let args = [
        "-f",
        "lavfi",
        "-i",
        &video,
        "-f",
        "lavfi",
        "-i",
        &sound,
        "-c:v",
        "libx264",
        "-g",
        "25",
        "-c:a",
        audio,
        "-b:a",
        "96k",
        "-metadata",
        &service,
    ];
    let path = path.to_str().unwrap();
    args.iter().chain([&path]).map(|a| a.to_string()).collect()
}

/// `parts` joined byte for byte into `dir/name`.
fn joined(dir: &Path, name: &str, parts: &[&Path]) -> PathBuf {
    let path = dir.join(name);
    cat_files(parts, &path);
    path
}

/// The bytes of `input`, `first` joined to another part, and where the PES of the streams
/// `id` picks (by stream ID) start in the part after `first`.
fn pes_after_the_join(
    input: &Path,
    first: &Path,
    id: impl Fn(u8) -> bool,
) -> (Vec<u8>, Vec<usize>) {
    let data = std::fs::read(input).unwrap();
    let seam = std::fs::metadata(first).unwrap().len() as usize;
    let starts = corpus::pes_starts(&data, id);
    let after = starts.into_iter().filter(|&at| at >= seam).collect();
    (data, after)
}

/// Upscale `input` into `dir/out.mkv`; the output, checked to hold every frame and audio
/// packet of `input` after one restart, exit 0, with no audio gap said.
fn upscaled_after_one_restart(dir: &Path, input: &Path) -> PathBuf {
    let out = dir.join("out.mkv");
    let o = upscale(input, &out, &fixture("nearest_x2.onnx"), &["--overwrite"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("timestamps restart 1 time(s)"), "{err}");
    // A part's sound starting after its picture leaves a gap at the join: the join's.
    assert!(!err.contains("audio has gaps"), "{err}");
    assert_eq!(counted_frames(&out), counted_frames(input));
    assert_eq!(packet_count(&out, "a:0"), packet_count(input, "a:0"));
    out
}

/// Two AC-3 (and E-AC-3) parts: the join makes one restart, and the output lasts as long as
/// the two parts, with no hole.
#[test]
fn an_ac3_join_is_one_restart_without_a_hole() {
    let dir = scratch();
    for audio in ["ac3", "eac3"] {
        let one = part(dir.path(), "one.ts", 4.0, 0.0, audio);
        let two = part(dir.path(), "two.ts", 4.0, 0.0, audio);
        let input = joined(dir.path(), "joined.ts", &[&one, &two]);
        let out = upscaled_after_one_restart(dir.path(), &input);
        let (video, sound) = (
            sorted_packet_times(&out, "v:0", &[]),
            sorted_packet_times(&out, "a:0", &[]),
        );
        let gaps = |t: &[f64], most: f64| t.windows(2).all(|w| w[1] - w[0] < most);
        assert!(gaps(&video, 0.05), "{audio}: video {video:?}");
        assert!(gaps(&sound, 0.05), "{audio}: sound {sound:?}");
        assert!(video.last().unwrap() - video[0] < 8.0, "{audio}: {video:?}");
    }
}

/// A second part whose sound starts 0.2 s before its picture (its first audio PES comes
/// after its first video PES in the file): its sound still leads its picture by 0.2 s.
#[test]
fn a_part_whose_sound_leads_keeps_its_lead() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", 4.0, 0.0, "mp2");
    let second = part(dir.path(), "second.ts", 3.0, 0.2, "mp2");
    let lead = |path: &Path, from: usize, a_from: usize| {
        sorted_packet_times(path, "v:0", &[])[from] - sorted_packet_times(path, "a:0", &[])[a_from]
    };
    let want = lead(&second, 0, 0);
    assert!((want - 0.2).abs() < 0.03, "the part alone: {want}");
    let input = joined(dir.path(), "joined.ts", &[&first, &second]);
    let out = upscaled_after_one_restart(dir.path(), &input);
    let first_audio = packet_count(&first, "a:0");
    let got = lead(&out, 100, first_audio);
    assert!(
        (got - want).abs() < 0.015,
        "lead {got} s, in the part {want} s"
    );
}

/// One audio PES's timestamp damaged (bit 29: 5965 s ahead; bit 17: 1.46 s back) a few PES
/// after a join: damage, refused (exit 3, the leap named), not more restarts; with
/// --allow-corrupt every frame and packet kept, after one restart.
#[test]
fn a_damaged_audio_timestamp_just_after_a_join_is_damage() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", 4.0, 0.0, "mp2");
    let second = part(dir.path(), "second.ts", 8.0, 0.0, "mp2");
    let input = joined(dir.path(), "joined.ts", &[&first, &second]);
    let (data, audio) = pes_after_the_join(&input, &first, |id| id & 0xE0 == 0xC0);
    for (nth, bit) in [(0, 29), (3, 29), (3, 17)] {
        let what = format!("audio PES {nth} after the join, bit {bit}");
        let damaged = dir.path().join("damaged.ts");
        let bytes = corpus::with_pes_pts_bit_flipped(&data, audio[nth], bit);
        std::fs::write(&damaged, bytes).unwrap();
        let out = dir.path().join("out.mkv");
        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--overwrite"],
        );
        assert_exit(&o, 3);
        assert!(
            stderr(&o).contains("it is damaged, so the packet is put back"),
            "{what}: {}",
            stderr(&o)
        );
        let args = ["--overwrite", "--allow-corrupt"];
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &args);
        assert_exit(&o, 0);
        let err = stderr(&o);
        assert!(
            err.contains("timestamps restart 1 time(s)"),
            "{what}: {err}"
        );
        assert_eq!(counted_frames(&out), counted_frames(&input), "{what}");
        assert_eq!(packet_count(&out, "a:0"), packet_count(&input, "a:0"));
    }
}

/// The first video PES after a join damaged (bit 17: shown 1.46 s before it is decoded; bit
/// 29: 5965 s after): damage, refused (exit 3); with --allow-corrupt one restart, every
/// packet kept and every frame where the undamaged join has it (give or take the 10 ms by
/// which the part's sound leads its picture: the frame goes on the frame grid). (The second
/// part was placed by the damaged time: a 1.46 s hole, or a 10 s one counted as 148778
/// frames missing.)
#[test]
fn a_damaged_first_frame_after_a_join_is_damage() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", 4.0, 0.0, "mp2");
    let second = part(dir.path(), "second.ts", 6.0, 0.0, "mp2");
    let input = joined(dir.path(), "joined.ts", &[&first, &second]);
    let want = dir.path().join("clean.mkv");
    std::fs::rename(upscaled_after_one_restart(dir.path(), &input), &want).unwrap();
    let (data, video) = pes_after_the_join(&input, &first, |id| id == 0xE0);
    let at = video[0];
    let times = |path: &Path| -> Vec<f64> {
        let mut t: Vec<f64> = (frame_times(path).iter())
            .map(|t| t.parse().unwrap())
            .collect();
        t.sort_by(f64::total_cmp);
        t
    };
    for bit in [17, 29] {
        let damaged = dir.path().join("damaged.ts");
        std::fs::write(&damaged, corpus::with_pes_pts_bit_flipped(&data, at, bit)).unwrap();
        let out = dir.path().join("out.mkv");
        let model = fixture("nearest_x2.onnx");
        let o = upscale(&damaged, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        assert!(stderr(&o).contains("damaged"), "bit {bit}: {}", stderr(&o));
        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        let err = stderr(&o);
        assert!(
            err.contains("timestamps restart 1 time(s)"),
            "bit {bit}: {err}"
        );
        assert_same_audio(&out, &want, &format!("bit {bit}"));
        let (got, clean) = (times(&out), times(&want));
        assert_eq!(got.len(), clean.len(), "bit {bit}");
        let off = got.iter().zip(&clean).map(|(a, b)| (a - b).abs());
        assert!(off.fold(0.0, f64::max) < 0.015, "bit {bit}: {got:?}");
    }
}

/// Parts with one MP2 frame to a PES, the second part's first one damaged 5.8 s (bit 19)
/// or 93 s (bit 23) ahead: damage, refused; with --allow-corrupt one restart, every packet
/// and frame where the undamaged join has them (give or take the 10 ms by which the part's
/// sound leads its picture: the seam is placed by the picture). (The splicer took the damaged time for the
/// stream's place, and the second part was placed after it: a 2.8 s hole, exit 0 with an
/// audio-gap warning; past ten seconds the frame was taken for a restart of its own, a
/// 10 s hole, exit 0.)
#[test]
fn a_damaged_first_sound_after_a_join_does_not_place_the_part() {
    let dir = scratch();
    let make = |name: &str| {
        let path = dir.path().join(name);
        let mut args = part_args(3.0, "mp2", &path);
        args.insert(args.len() - 1, "-pes_payload_size".into());
        args.insert(args.len() - 1, "0".into());
        ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
        path
    };
    let (first, second) = (make("first.ts"), make("second.ts"));
    let input = joined(dir.path(), "joined.ts", &[&first, &second]);
    let want = dir.path().join("clean.mkv");
    std::fs::rename(upscaled_after_one_restart(dir.path(), &input), &want).unwrap();
    let (data, audio) = pes_after_the_join(&input, &first, |id| id & 0xE0 == 0xC0);
    let at = audio[0];
    let model = fixture("nearest_x2.onnx");
    for bit in [19, 23] {
        let damaged = dir.path().join("damaged.ts");
        std::fs::write(&damaged, corpus::with_pes_pts_bit_flipped(&data, at, bit)).unwrap();
        let out = dir.path().join("out.mkv");
        assert_exit(&upscale(&damaged, &out, &model, &["--overwrite"]), 3);
        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        let err = stderr(&o);
        assert!(
            err.contains("timestamps restart 1 time(s)"),
            "bit {bit}: {err}"
        );
        assert_times_as_clean(&out, &want, &format!("bit {bit}"));
    }
}

/// The second part's first audio PES (a dozen MP2 frames) with its PTS 1.46 s early (bit
/// 17) or 0.18 s late (bit 14): damage, refused (exit 3); with --allow-corrupt one restart,
/// every frame and packet kept where the undamaged join has them, within 15 ms. (Taken for
/// the part's first sound, it kept the rest of the part's sound 1.46 s late, exit 0 with
/// an audio-gap warning, or placed the whole part by it.)
#[test]
fn a_damaged_first_sound_pes_after_a_join_is_put_back() {
    let dir = scratch();
    let one = part(dir.path(), "one.ts", 4.0, 0.0, "mp2");
    let two = part(dir.path(), "two.ts", 4.0, 0.0, "mp2");
    let input = joined(dir.path(), "joined.ts", &[&one, &two]);
    let want = dir.path().join("clean.mkv");
    std::fs::rename(upscaled_after_one_restart(dir.path(), &input), &want).unwrap();
    let (data, audio) = pes_after_the_join(&input, &one, |id| id & 0xE0 == 0xC0);
    let model = fixture("nearest_x2.onnx");
    for bit in [17, 14] {
        let damaged = dir.path().join("damaged.ts");
        let bytes = corpus::with_pes_pts_bit_flipped(&data, audio[0], bit);
        std::fs::write(&damaged, bytes).unwrap();
        let out = dir.path().join("out.mkv");
        let o = upscale(&damaged, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        assert!(
            stderr(&o).contains("first packet of a joined part"),
            "{}",
            stderr(&o)
        );
        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        assert!(
            stderr(&o).contains("timestamps restart 1 time(s)"),
            "{}",
            stderr(&o)
        );
        assert_times_as_clean(&out, &want, &format!("bit {bit}"));
    }
}

/// A second part whose timestamps start 0.28 s or 0.98 s before the first part's end (two
/// captures overlapping in time): one restart, exit 0, every frame and packet kept, each
/// part in sync. (Decode times going back by less than a second were no restart: 7 frames
/// dropped as duplicates and 11 to 41 audio packets as unstorable, exit 3.)
#[test]
fn parts_whose_times_overlap_are_one_restart() {
    let dir = scratch();
    let first = part(dir.path(), "first.ts", 4.0, 0.0, "mp2");
    for offset in ["3.8", "3.1"] {
        let second = dir.path().join("second.ts");
        let mut args = vec!["-output_ts_offset".to_owned(), offset.to_owned()];
        args.extend(part_args(3.0, "mp2", &second));
        ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let input = joined(dir.path(), "joined.ts", &[&first, &second]);
        let out = upscaled_after_one_restart(dir.path(), &input);
        let what = format!("offset {offset}");
        assert_second_part_in_sync(&out, (&first, 100), &second, (0.015, &what));
    }
}

/// One recording cut by FFmpeg's segment muxer and joined back, and a part starting 5 s
/// after the first ends: their timestamps go on, but each part's muxer starts every
/// continuity counter at 0. Accepted (exit 0), every frame and packet kept; a counter
/// broken elsewhere in such a file is still damage. (Both were refused, exit 3, "Continuity
/// check failed for pid 17".)
#[test]
fn parts_whose_timestamps_go_on_join_without_damage() {
    let dir = scratch();
    let whole = dir.path().join("whole.ts");
    lavfi_clip(
        &whole,
        &["testsrc2=s=96x64:r=25:d=8", "sine=f=440:r=48000:d=8"],
        &["-c:v", "libx264", "-g", "25", "-c:a", "mp2"],
    );
    let pattern = dir.path().join("seg%d.ts");
    ffmpeg(&[
        "-i",
        whole.to_str().unwrap(),
        "-c",
        "copy",
        "-f",
        "segment",
        "-segment_time",
        "3",
        "-segment_format",
        "mpegts",
        pattern.to_str().unwrap(),
    ]);
    let segments: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("seg{i}.ts")))
        .collect();
    let refs: Vec<&Path> = segments.iter().map(PathBuf::as_path).collect();
    let rejoined = joined(dir.path(), "rejoined.ts", &refs);
    let first = part(dir.path(), "first.ts", 4.0, 0.0, "mp2");
    let later = dir.path().join("later.ts");
    ffmpeg(&[
        "-i",
        first.to_str().unwrap(),
        "-c",
        "copy",
        "-output_ts_offset",
        "9",
        later.to_str().unwrap(),
    ]);
    let gap = joined(dir.path(), "gap.ts", &[&first, &later]);
    let model = fixture("nearest_x2.onnx");
    for input in [&rejoined, &gap] {
        let out = dir.path().join("out.mkv");
        let o = upscale(input, &out, &model, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("damaged"), "{}", stderr(&o));
        assert_eq!(counted_frames(&out), counted_frames(input));
        assert_eq!(packet_count(&out, "a:0"), packet_count(input, "a:0"));
    }
    // A video TS packet dropped in the second segment: still damage.
    let data = std::fs::read(&rejoined).unwrap();
    let seam = std::fs::metadata(&segments[0]).unwrap().len() as usize;
    let video = corpus::pes_starts(&data, |id| id == 0xE0);
    let at = *video.iter().find(|&&at| at > seam + 188 * 200).unwrap();
    let packet = at / 188 * 188 + 188;
    let damaged = dir.path().join("damaged.ts");
    std::fs::write(&damaged, [&data[..packet], &data[packet + 188..]].concat()).unwrap();
    let o = upscale(
        &damaged,
        &dir.path().join("out.mkv"),
        &model,
        &["--overwrite"],
    );
    assert_exit(&o, 3);
}

/// Two MPEG-PS files (MPEG-2 video with B-frames, MP2 sound) joined, the second's sound
/// starting with its picture or 0.1 s after it: one restart, every frame and packet kept,
/// the second part's sound as far behind its picture as in the part. (The second part's
/// first frame, whose PES starts before the sound that showed the restart but is handed
/// out after it, was taken for a last frame of the first part and refused as a timestamp
/// out of line, exit 3; with the sound 0.1 s late, a frame was dropped as a duplicate.)
#[test]
fn a_program_stream_join_is_one_restart() {
    let dir = scratch();
    let part = |name: &str, seconds: &str, sound_delay: &str| {
        let path = dir.path().join(name);
        let video = format!("testsrc2=s=96x64:r=25:d={seconds}");
        let sound = format!("sine=f=440:r=48000:d={seconds}");
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            &video,
            "-itsoffset",
            sound_delay,
            "-f",
            "lavfi",
            "-i",
            &sound,
            "-c:v",
            "mpeg2video",
            "-g",
            "12",
            "-bf",
            "2",
            "-c:a",
            "mp2",
            "-b:a",
            "128k",
            path.to_str().unwrap(),
        ]);
        path
    };
    let first = part("m1.mpg", "3", "0");
    for delay in ["0", "0.1"] {
        let second = part("m2.mpg", "4", delay);
        let input = joined(dir.path(), "joined.mpg", &[&first, &second]);
        let out = upscaled_after_one_restart(dir.path(), &input);
        let what = format!("delay {delay}");
        assert_second_part_in_sync(&out, (&first, 75), &second, (0.015, &what));
    }
}

/// Two parts whose clocks go on from each other (a segment muxer's files joined back), the
/// first's PAT and PMT counters ending at 15 (as every part's do once it holds a multiple of
/// sixteen of them): the second's go on to 0, and only its SDT, picture and sound break to 0.
/// A join, every frame and packet kept (exit 0). (Taken for no join, the SDT's and the
/// streams' breaks counted as damage: exit 3, "Continuity check failed for pid 17".)
#[test]
fn a_join_whose_pat_counter_goes_on_is_still_a_join() {
    let dir = scratch();
    let make = |name: &str, offset: &str| {
        let path = dir.path().join(name);
        let mut args = part_args(4.0, "mp2", &path);
        let at = args.len() - 1;
        args.splice(at..at, ["-output_ts_offset".into(), offset.into()]);
        ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
        path
    };
    let (first, second) = (make("first.ts", "0"), make("second.ts", "4"));
    let ending = dir.path().join("ending.ts");
    let bytes = tables_counters_ending_at_15(&std::fs::read(&first).unwrap());
    std::fs::write(&ending, bytes).unwrap();
    let input = joined(dir.path(), "joined.ts", &[&ending, &second]);
    let out = dir.path().join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("damaged"), "{}", stderr(&o));
    assert_eq!(counted_frames(&out), counted_frames(&input));
    assert_eq!(packet_count(&out, "a:0"), packet_count(&input, "a:0"));
}

/// The transport stream `data` with its PAT's and PMT's (PID 4096) continuity counters
/// numbered on so that the last of each is 15.
fn tables_counters_ending_at_15(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let pid = |p: &[u8]| u16::from(p[1] & 0x1F) << 8 | u16::from(p[2]);
    for table in [0, 4096] {
        let at: Vec<usize> = (0..out.len() / 188)
            .map(|k| k * 188)
            .filter(|&i| out[i] == 0x47 && pid(&out[i..]) == table && out[i + 3] & 0x10 != 0)
            .collect();
        for (k, &i) in at.iter().enumerate() {
            let cc = (15 + 16 * at.len() - (at.len() - 1 - k)) % 16;
            out[i + 3] = (out[i + 3] & 0xF0) | cc as u8;
        }
    }
    out
}

/// That `out` holds as many video frames and audio packets as `want` (the undamaged join's
/// output), each within 15 ms of its time there.
fn assert_times_as_clean(out: &Path, want: &Path, what: &str) {
    for stream in ["v:0", "a:0"] {
        let (got, clean) = (
            sorted_packet_times(out, stream, &[]),
            sorted_packet_times(want, stream, &[]),
        );
        assert_eq!(got.len(), clean.len(), "{what}, {stream}");
        let off = got.iter().zip(&clean).map(|(a, b)| (a - b).abs());
        let most = off.fold(0.0, f64::max);
        assert!(most < 0.015, "{what}, {stream}: {most} s off");
    }
}
