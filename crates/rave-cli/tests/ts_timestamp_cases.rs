//! MPEG-TS timestamps damaged in one PES header (no CRC guards them): an audio PES holds a
//! dozen AAC frames, each timed from its header, so one flipped bit moves them all; a
//! B-frame's PES carries a PTS only, so its decode time moves with it. A transport stream
//! may restart its timestamps (a splice), and one stream's jump was taken for one: the
//! run finished "complete" with the picture and sound seconds out of place.

mod common;
mod corpus;

use common::*;

/// Four seconds of 96x64 H.264 with B-frames and 48 kHz AAC in MPEG-TS, in `dir`.
fn clean_ts(dir: &std::path::Path) -> std::path::PathBuf {
    let clean = dir.join("clean.ts");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=96x64:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &["-c:v", "libx264", "-bf", "3", "-g", "50", "-c:a", "aac"],
    );
    clean
}

/// Four seconds of 96x64 H.264 and 48 kHz `audio` in MPEG-TS with one audio frame to a
/// PES, in `dir`.
fn one_frame_pes_ts(dir: &std::path::Path, audio: &str) -> std::path::PathBuf {
    let clean = dir.join("clean.ts");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=96x64:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &[
            "-c:v",
            "libx264",
            "-g",
            "25",
            "-c:a",
            audio,
            "-pes_payload_size",
            "0",
        ],
    );
    clean
}

/// One audio PES's PTS 2.9 s back or ahead (bit 18 of the 90 kHz clock), 47722 s ahead (bit
/// 32), or one video PES's 2.9 s: refused as damage, not spliced; with --allow-corrupt
/// every packet and frame back in its place.
#[test]
fn a_pes_timestamp_out_of_place_is_damage_put_back_not_a_splice() {
    assert_damage_put_back(|_, audio, video| {
        vec![
            ("audio PES 3", audio[3], 18),
            ("audio PES 5", audio[5], 18),
            ("audio PES 4", audio[4], 32),
            ("video PES 31", video[31], 18),
        ]
    });
}

/// A stream's first PES damaged, with no packet before it to show the damage: the first
/// audio PES's PTS 2.9 s (bit 18) or 5965 s (bit 29) ahead of the packets after it, the
/// first or second video PES's 1.46 s off (bit 17: shown before it is decoded, or long
/// after; bit 14: the first frame, an IDR picture, 0.18 s late): refused as damage; with
/// --allow-corrupt every packet and frame back in its place. A damaged second or third PES
/// does not make the first look damaged. (The late IDR picture was exit 0, the frames
/// shown before it skipped as "leading" ones of a capture starting mid-GOP.)
/// (The first audio PES taken as it was dropped every packet until the stream passed it,
/// for bit 29 the whole sound but its first PES; the first frame shown 1.4 s before the
/// rest was an exit 0 with nothing said.)
#[test]
fn a_streams_first_pes_out_of_place_is_damage_put_back() {
    assert_damage_put_back(|_, audio, video| {
        vec![
            ("audio PES 0, bit 18", audio[0], 18),
            ("audio PES 0, bit 29", audio[0], 29),
            // Late by less than its run: the next PES starts inside it.
            ("audio PES 0, bit 13", audio[0], 13),
            // The first PES in step, the next ones not: they are the damaged ones.
            ("audio PES 1, bit 17", audio[1], 17),
            ("audio PES 2, bit 17", audio[2], 17),
            ("video PES 0, bit 17", video[0], 17),
            ("video PES 1, bit 17", video[1], 17),
            // The first frame, an IDR picture, timed after frames decoded after it.
            ("video PES 0, bit 14", video[0], 14),
        ]
    });
}

/// One PES's PTS off by about a frame: an audio PES 0.09 s late (bit 13), its dozen frames
/// running past the next PES's start; a frame 46 ms early (bit 12), 0.85 of a frame after
/// the one before it. Refused as damage; with --allow-corrupt every packet and frame in its
/// place. (The late run was kept and the good packets it overran dropped; the early frame
/// was taken for the one in line, and the frame on its own slot dropped.)
#[test]
fn a_pes_timestamp_off_by_a_frame_or_so_is_damage_put_back() {
    assert_damage_put_back(|_, audio, video| {
        vec![
            ("audio PES 6, bit 13", audio[6], 13),
            ("video PES 4, bit 12", video[4], 12),
        ]
    });
}

/// AC-3 with one frame to a PES, its first PES 5.8 s ahead (bit 19): refused as damage;
/// with --allow-corrupt the frame back at the stream's start, no restart said. (The
/// splicer took the damaged time for the stream's place: every later packet went "back"
/// from it, and where the picture ended one was taken for a restart, the damaged frame
/// put after the last and "1.89 s of audio missing" said.)
#[test]
fn a_first_ac3_frame_far_ahead_is_put_back() {
    let dir = scratch();
    let clean = one_frame_pes_ts(dir.path(), "ac3");
    let model = fixture("nearest_x2.onnx");
    let want = dir.path().join("clean-out.mkv");
    assert_exit(&upscale(&clean, &want, &model, &[]), 0);
    let data = std::fs::read(&clean).unwrap();
    let audio = corpus::pes_starts(&data, |id| id == 0xBD);
    let damaged = dir.path().join("damaged.ts");
    std::fs::write(
        &damaged,
        corpus::with_pes_pts_bit_flipped(&data, audio[0], 19),
    )
    .unwrap();
    let out = dir.path().join("out.mkv");
    assert_exit(&upscale(&damaged, &out, &model, &[]), 3);
    let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        !err.contains("restart") && !err.contains("audio missing"),
        "{err}"
    );
    assert_same_audio(&out, &want, "AC-3");
    assert_eq!(frame_times(&out), frame_times(&want));
}

/// One PES's PTS a little back, less than a restart: an audio PES 45 or 91 ms (bit 12 or
/// 13 cleared), its dozen frames starting inside the packets before it; a B-frame (its
/// PES carries no DTS, so its decode time moves too) 45 ms, decoded before the frame before
/// it. Refused as damage, not taken for a join whose clocks overlap (the stream's next PES
/// comes back to where it was, where after a join it goes on from the stepped one); with
/// --allow-corrupt every packet and frame in its place.
#[test]
fn a_pes_timestamp_a_little_back_is_damage_not_a_joins_overlap() {
    assert_damage_put_back(|data, audio, video| {
        // Past the first few PES (whose damage has readings of its own).
        let set = |starts: &[usize], bit: u32, pts_only: bool| {
            *starts[starts.len() / 4..]
                .iter()
                .find(|&&at| {
                    let (pts, with_dts) = corpus::pes_pts(data, at);
                    pts & (1 << bit) != 0 && (!pts_only || !with_dts)
                })
                .expect("a PES with the bit set")
        };
        vec![
            ("audio PES 45 ms back", set(audio, 12, false), 12),
            ("audio PES 91 ms back", set(audio, 13, false), 13),
            ("B-frame 45 ms back", set(video, 12, true), 12),
        ]
    });
}

/// One AAC frame to a PES, one PES's PTS moved by less than a frame's length more or less
/// (1920 ticks): back onto the frame before it (the same time), 2/3 or a little over
/// half a frame back, 2/3 of a frame ahead, all but onto the frame after it; the second
/// or sixth PES of the stream too. Refused as damage; with
/// --allow-corrupt every packet in its place. (Each was an exit 0 with nothing said, the
/// frame played out of place: a muxer stores an audio packet overlapping its neighbour.)
/// Moved by a tick, it is in its place.
#[test]
fn a_one_frame_audio_pes_moved_less_than_a_frame_is_damage_put_back() {
    let dir = scratch();
    let clean = one_frame_pes_ts(dir.path(), "aac");
    let data = std::fs::read(&clean).unwrap();
    let audio = corpus::pes_starts(&data, |id| id & 0xE0 == 0xC0);
    let at = audio[audio.len() / 2];
    // Mid-stream, and among the stream's first packets (the packets after them show its
    // grid).
    let moves = [
        (at, -1920),
        (at, -1280),
        (at, -1100),
        (at, 1280),
        (at, 1900),
    ];
    let first = [(audio[1], -1920), (audio[1], 1280), (audio[5], -1280)];
    let cases = moves.into_iter().chain(first).map(|(at, ticks)| {
        let what = format!("PES at byte {at} moved {ticks}");
        (what, corpus::with_pes_pts_moved(&data, at, ticks))
    });
    let cases: Vec<_> = cases.collect();
    assert_each_put_back(dir.path(), &clean, cases.iter().map(|(w, d)| (w, d)));

    let model = fixture("nearest_x2.onnx");
    let (want, out) = (
        dir.path().join("clean-out.mkv"),
        dir.path().join("tick.mkv"),
    );
    let nudged = dir.path().join("nudged.ts");
    std::fs::write(&nudged, corpus::with_pes_pts_moved(&data, at, -1)).unwrap();
    let o = upscale(&nudged, &out, &model, &[]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("damage"), "{}", stderr(&o));
    assert_same_audio(&out, &want, "moved by a tick");
}

/// The cases of [`assert_damage_put_back`]: what each is, where its PES starts, which bit
/// of its PTS is flipped.
type Cases = Vec<(&'static str, usize, u32)>;

/// The PES of [`clean_ts`] each case names (by the starts of its audio and video PES),
/// its PTS bit flipped: refused as damage said and put back, not a restart; with
/// --allow-corrupt the same frames and audio packets as the clean file's output.
fn assert_damage_put_back(cases: impl Fn(&[u8], &[usize], &[usize]) -> Cases) {
    let dir = scratch();
    let clean = clean_ts(dir.path());
    let data = std::fs::read(&clean).unwrap();
    let audio = corpus::pes_starts(&data, |id| id & 0xE0 == 0xC0);
    let video = corpus::pes_starts(&data, |id| id == 0xE0);
    let damaged: Vec<_> = (cases(&data, &audio, &video).into_iter())
        .map(|(what, at, bit)| (what, corpus::with_pes_pts_bit_flipped(&data, at, bit)))
        .collect();
    assert_each_put_back(dir.path(), &clean, damaged.iter().map(|(w, d)| (*w, d)));
}

/// Each damaged copy of `clean` (what it is, its bytes), upscaled in `dir`: refused as
/// damage said and put back, not a restart; with --allow-corrupt the same frames and audio
/// packets as the clean file's output (written to `dir`/clean-out.mkv).
fn assert_each_put_back<'a, W: std::fmt::Debug>(
    dir: &std::path::Path,
    clean: &std::path::Path,
    cases: impl Iterator<Item = (W, &'a Vec<u8>)>,
) {
    let model = fixture("nearest_x2.onnx");
    let want = dir.join("clean-out.mkv");
    assert_exit(&upscale(clean, &want, &model, &[]), 0);
    for (what, bytes) in cases {
        let what = format!("{what:?}");
        let what = what.as_str();
        let damaged = dir.join("damaged.ts");
        std::fs::write(&damaged, bytes).unwrap();
        let out = dir.join("out.mkv");
        let o = upscale(&damaged, &out, &model, &["--overwrite"]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("it is damaged, so the") && !err.contains("restart"),
            "{what}: {err}"
        );

        let o = upscale(&damaged, &out, &model, &["--overwrite", "--allow-corrupt"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("restart"), "{what}: {}", stderr(&o));
        assert_same_audio(&out, &want, what);
        assert_eq!(frame_times(&out), frame_times(&want), "{what}");
    }
}

/// Two captures joined end to end whose second part's picture starts 1.5 s after its sound
/// (its audio jumps back first, its video only a second later): the splice is confirmed by
/// the video not going on in step, then the video's own restart follows it; every frame and
/// packet kept. (Confirming a restart by the next packet of another stream alone took the
/// first part's last frame, which FFmpeg hands out only when the next PES starts, for the
/// video going on, and refused the file as damaged.)
#[test]
fn a_join_whose_streams_restart_apart_is_still_a_splice() {
    let dir = scratch();
    let (joined, out) = joined_and_upscaled(
        dir.path(),
        ((6.0, 6.0), "null", "2"),
        ((3.0, 4.5), "setpts=PTS+1.5/TB", "5.4"),
    );
    assert_eq!(counted_frames(&out), counted_frames(&joined));
    assert_eq!(packet_count(&out, "a:0"), packet_count(&joined, "a:0"));
}

/// One part of a capture to make with [`ts_part`]: its seconds, picture filter and offset.
type Part<'a> = ((f64, f64), &'a str, &'a str);

/// Two parts made in `dir` and joined end to end, upscaled (exit 0, a restart said): the
/// joined input and the output.
fn joined_and_upscaled(
    dir: &std::path::Path,
    first: Part<'_>,
    second: Part<'_>,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let parts = [
        (dir.join("first.ts"), first),
        (dir.join("second.ts"), second),
    ];
    let mut bytes = Vec::new();
    for (path, (seconds, filter, offset)) in &parts {
        ts_part(path, *seconds, filter, offset);
        bytes.extend(std::fs::read(path).unwrap());
    }
    let joined = dir.join("joined.ts");
    std::fs::write(&joined, bytes).unwrap();
    let out = dir.join("out.mkv");
    let o = upscale(&joined, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("timestamps restart"), "{}", stderr(&o));
    (joined, out)
}

/// A part of a capture at `path`: (`seconds` of 64x48 picture, of sound), the picture
/// through `video_filter`, the whole shifted by `offset` seconds.
fn ts_part(path: &std::path::Path, seconds: (f64, f64), video_filter: &str, offset: &str) {
    let video = format!("testsrc=s=64x48:r=25:d={}", seconds.0);
    let audio = format!("sine=f=440:d={}", seconds.1);
    let graph = format!("[0:v]{video_filter}[v]");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &video,
        "-f",
        "lavfi",
        "-i",
        &audio,
        "-filter_complex",
        &graph,
        "-map",
        "[v]",
        "-map",
        "1:a",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-g",
        "25",
        "-c:a",
        "aac",
        "-output_ts_offset",
        offset,
        path.to_str().unwrap(),
    ]);
}

/// Two captures joined end to end whose second part's picture starts 2 s after its sound,
/// where its first frame happens to follow the first part's last one in step (its sound
/// starts back at the first part's start): the sound's own next PES confirms the splice,
/// the first part's last frames (handed out by FFmpeg after the second part's first sound)
/// keep their place, and the second part's picture comes 2 s after its sound, as in the
/// part alone. (The picture going on in step denied the splice: 90 audio packets were
/// unstorable and the file refused as damaged.)
#[test]
fn a_join_whose_second_picture_goes_on_in_step_is_still_a_splice() {
    let dir = scratch();
    let (joined, out) = joined_and_upscaled(
        dir.path(),
        ((2.0, 2.0), "null", "1.4"),
        ((2.0, 4.0), "setpts=PTS+2/TB", "1.4"),
    );
    assert_eq!(counted_frames(&out), 100);
    assert_eq!(packet_count(&out, "a:0"), packet_count(&joined, "a:0"));
    let mut times: Vec<f64> = frame_times(&out)
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    times.sort_by(f64::total_cmp);
    let steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        steps[..49].iter().all(|s| (s - 0.04).abs() < 0.002),
        "the first part's frames in step: {steps:?}"
    );
    // The first part's sound ends where its picture does; the second part's picture starts
    // 2 s into its sound.
    assert!((steps[49] - 2.04).abs() < 0.1, "{steps:?}");
    assert!(
        steps[50..].iter().all(|s| (s - 0.04).abs() < 0.002),
        "{steps:?}"
    );
}
