//! Targeted damage, beside the corpus run (damage_corpus.rs): whole clusters lost in HEVC
//! 10-bit Matroska, audio timestamps going backwards, a copied packet no muxer can store, an MP4 of which no frame decodes, B-frames timed
//! in decode order, an AVI whose header is lost, a Matroska codec name damaged, two MP4s joined end to end, and the
//! advice for a damaged input that cannot be cut into segments followed to the end. Transport streams' own cases are in
//! transport_stream_cases.rs, FLV's in flv_damage_cases.rs.

mod common;
mod corpus;

use common::*;
use corpus::FRAMES;

/// Two seconds of 64x48 H.264 (a keyframe every 10 frames) with 48 kHz sound, `audio` the
/// audio codec, `extra` more output options.
fn two_second_clip(path: &std::path::Path, audio: &str, extra: &[&str]) {
    let options = [
        &["-c:v", "libx264", "-g", "10", "-c:a", audio, "-shortest"][..],
        extra,
    ]
    .concat();
    lavfi_clip(
        path,
        &[
            "testsrc2=size=64x48:rate=25:duration=2",
            "sine=sample_rate=48000:duration=2",
        ],
        &options,
    );
}

/// Where the `n`th packet (from 0) of the stream `select` (`v:0`, `a:0`) lies in `path`:
/// (byte position, size).
fn packet_place(path: &std::path::Path, select: &str, n: usize) -> (usize, usize) {
    let listed = ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            "packet=pos,size",
            "-of",
            "csv=p=0",
        ],
    );
    listed
        .lines()
        .nth(n)
        .and_then(|l| l.split_once(','))
        .map(|(size, pos)| (pos.parse().unwrap(), size.parse().unwrap()))
        .expect("size,pos")
}

#[test]
fn damage_in_the_middle_of_hevc_10bit_matroska_is_counted() {
    let dir = scratch();
    let clean = dir.path().join("hevc10.mkv");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=320x176:rate=24:duration=5.5",
            "sine=duration=5.5",
        ],
        &[
            "-c:v",
            "libx265",
            "-pix_fmt",
            "yuv420p10le",
            "-preset",
            "ultrafast",
            "-x265-params",
            "log-level=error:keyint=24",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
    // Garbage over 8 KiB at 30% of the file: the demuxer loses whole clusters.
    let mut data = std::fs::read(&clean).unwrap();
    let at = data.len() * 3 / 10;
    corpus::fill_garbage(&mut data[at..at + 8192], 0x1234_5678);
    let damaged = dir.path().join("damaged.mkv");
    std::fs::write(&damaged, data).unwrap();
    let readable = frame_times(&damaged).len() as u64;
    assert!(
        readable < 132,
        "the damage must lose frames for this test ({readable})"
    );
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &v["error"]["damage"];
    let missing = d["frames_missing"].as_u64().unwrap();
    assert!(
        missing >= 132 - readable,
        "{missing} counted, {readable} of 132 readable: {v}"
    );
    assert!(d["demux_errors"].as_u64().unwrap() > 0, "{v}");
    assert!(
        d["audio_missing_s"].as_f64().unwrap() > 0.5,
        "whole clusters of audio: {v}"
    );
    assert!(!out.exists());
}

/// One audio block 200 ms back in time (its neighbours in place): input damage, refused
/// by default; with --allow-corrupt it is put back between its neighbours (it used to be
/// dropped as going backwards), every packet out at its clean time.
#[test]
fn audio_timestamps_going_backwards_are_input_damage_and_put_back_when_allowed() {
    let dir = scratch();
    let clean = dir.path().join("clean.mkv");
    lavfi_clip(
        &clean,
        &[
            "testsrc2=size=64x48:rate=25:duration=1.2",
            "sine=sample_rate=48000:duration=1.2",
        ],
        &[
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-write_crc32",
            "0",
            "-shortest",
        ],
    );
    let damaged = dir.path().join("back.mkv");
    std::fs::write(
        &damaged,
        corpus::with_audio_going_back(&std::fs::read(&clean).unwrap(), 30),
    )
    .unwrap();
    for out_name in ["out.mp4", "out.mkv"] {
        let want = dir.path().join(format!("clean-{out_name}"));
        assert_exit(&upscale(&clean, &want, &fixture("nearest_x2.onnx"), &[]), 0);
        let out = dir.path().join(out_name);
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("s back behind its stream"), "{v}");
        assert!(!out.exists());

        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--json", "--allow-corrupt"],
        );
        let v = json_report(&o);
        assert_eq!(v["input_damage"]["packets_dropped"], 0, "{v}");
        assert_same_audio(&out, &want, out_name);
        assert_eq!(frame_times(&out).len(), 30, "{out_name}");
    }
}

/// An ADTS header destroyed inside an MPEG-TS: the AAC decoder of the plan's read refuses
/// the packet, so the input is refused before any segment is upscaled; with
/// --allow-corrupt the packet, which no muxer can store either, is left out and counted.
#[test]
fn a_copied_packet_no_muxer_can_store_is_input_damage() {
    let dir = scratch();
    let ts = corpus::CONTAINERS.iter().find(|c| c.name == "ts").unwrap();
    let clean = corpus::make_clean(dir.path(), ts);
    let original = packet_count(&clean, "a:0");
    let damaged = dir.path().join("adts.ts");
    std::fs::write(
        &damaged,
        corpus::with_broken_adts_header(&std::fs::read(&clean).unwrap()),
    )
    .unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &["--json"]);
    assert_exit(&o, 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["error"]["kind"], "corrupt_stream", "{v}");
    assert_eq!(v["error"]["damage"]["audio_packets_damaged"], 1, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not decode"),
        "{v}"
    );
    assert!(!out.exists());
    assert!(
        !dir.path().join(".out.mkv.rave-work").exists() && !stderr(&o).contains("segment"),
        "refused before work: {}",
        stderr(&o)
    );
    let o = upscale(
        &damaged,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--json", "--allow-corrupt"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["packets_dropped"], 1, "{v}");
    assert_eq!(v["input_damage"]["audio_packets_damaged"], 1, "{v}");
    assert_eq!(packet_count(&out, "a:0"), original - 1);
    assert_eq!(frame_times(&out).len(), FRAMES as usize);
}

/// An MP4 whose video timing table is zeroed reads, but no frame of it decodes: refused
/// (exit 3) with nothing left behind, neither a work folder nor advice to run again, which
/// would fail the same way.
#[test]
fn an_input_of_which_no_frame_decodes_leaves_no_work_folder() {
    let dir = scratch();
    let clean = make_clip(dir.path(), "clean.mp4", "32x32", 25);
    let mut bytes = std::fs::read(&clean).unwrap();
    let at = bytes.windows(4).position(|w| w == b"stts").unwrap();
    bytes[at + 4..at + 68].fill(0);
    let damaged = dir.path().join("no_timing.mp4");
    std::fs::write(&damaged, bytes).unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(err.contains("no video frame could be decoded"), "{err}");
    assert!(!err.contains("work folder"), "{err}");
    assert_eq!(sorted_names(dir.path()), ["clean.mp4", "no_timing.mp4"]);
}

/// A fragmented MP4 cut inside its first fragment, with --allow-corrupt: its one segment is
/// "finished" with no frame, and the refusal (exit 3, --allow-corrupt cannot help) keeps no
/// work folder and gives no advice to run again with the option already given.
#[test]
fn with_allow_corrupt_an_input_of_which_no_frame_decodes_leaves_no_work_folder() {
    let dir = scratch();
    let clean = dir.path().join("frag.mp4");
    two_second_clip(
        &clean,
        "aac",
        &["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
    );
    let bytes = std::fs::read(&clean).unwrap();
    let cut = dir.path().join("cut.mp4");
    std::fs::write(&cut, &bytes[..bytes.len() / 10]).unwrap();
    let out = dir.path().join("out.mp4");
    for _ in 0..2 {
        let o = upscale(
            &cut,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--allow-corrupt"],
        );
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(err.contains("--allow-corrupt cannot help"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(sorted_names(dir.path()), ["cut.mp4", "frag.mp4"]);
    }
}

/// A remux that copied decode times into presentation times (`setts=pts=DTS`) on video with
/// B-frames: the packets look cleanly timed, but the decoder hands frames out in another
/// order than their times, so segments cut by time would not get their planned frames. The
/// job is read as one segment, where the timeline shows the damage: refused (exit 3, no
/// work folder), and with --allow-corrupt upscaled with the count and the reason.
#[test]
fn b_frames_timed_in_decode_order_are_read_as_one_segment_and_counted() {
    let dir = scratch();
    let clean = dir.path().join("b.mp4");
    let bframes = ["-c:v", "libx264", "-bf", "2", "-g", "10"];
    lavfi_clip(
        &clean,
        &["testsrc2=size=96x64:rate=25:duration=2"],
        &bframes,
    );
    let damaged = dir.path().join("pts_from_dts.mp4");
    let (c, d) = (clean.to_str().unwrap(), damaged.to_str().unwrap());
    ffmpeg(&["-i", c, "-c", "copy", "-bsf:v", "setts=pts=DTS", d]);
    let out = dir.path().join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let segmented = ["--segment-frames", "10"];
    let o = upscale(&damaged, &out, &m, &segmented);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("damaged input") && err.contains("duplicated frames"),
        "{err}"
    );
    assert!(!err.contains("work folder"), "{err}");
    assert_eq!(sorted_names(dir.path()), ["b.mp4", "pts_from_dts.mp4"]);
    let o = upscale(
        &damaged,
        &out,
        &m,
        &[&segmented[..], &["--allow-corrupt"]].concat(),
    );
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("segments: 1 ")
            && text.contains("every packet's presentation time equals its decode time"),
        "{text}"
    );
    // Matroska stores the presentation times only (FFmpeg guesses the others): they never
    // go back in decode order, which B-frames make them do.
    let in_mkv = dir.path().join("pts_from_dts.mkv");
    ffmpeg(&["-i", d, "-c", "copy", in_mkv.to_str().unwrap()]);
    let o = upscale(
        &in_mkv,
        &out,
        &m,
        &[&segmented[..], &["--allow-corrupt", "--overwrite"]].concat(),
    );
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("segments: 1 ")
            && stdout(&o).contains("never go back in decoding order"),
        "{}",
        stdout(&o)
    );
    // The same video with its own times is cut into segments as before, in either.
    for (name, container) in [
        ("clean.mkv", &clean),
        ("clean2.mkv", &dir.path().join("b.mkv")),
    ] {
        if !container.exists() {
            ffmpeg(&["-i", c, "-c", "copy", container.to_str().unwrap()]);
        }
        let o = upscale(container, &dir.path().join(name), &m, &segmented);
        assert_exit(&o, 0);
        assert!(stdout(&o).contains("segments: 5 "), "{}", stdout(&o));
    }
}

/// An AVI whose header is zeroed: FFmpeg's probe finds no AVI and reads the pictures as a
/// raw MPEG-4 stream, the audio gone unseen. Refused as damage; with --allow-corrupt the
/// report says the audio could not be read instead of dropping it in silence.
#[test]
fn a_container_whose_header_is_lost_is_damage_that_names_the_lost_streams() {
    let dir = scratch();
    let clean = dir.path().join("clean.avi");
    let sources = ["testsrc2=size=96x64:rate=25:duration=2", "sine=duration=2"];
    lavfi_clip(&clean, &sources, &["-c:v", "mpeg4", "-c:a", "pcm_s16le"]);
    let mut bytes = std::fs::read(&clean).unwrap();
    let movi = bytes.windows(4).position(|w| w == b"movi").unwrap();
    bytes[..movi - 8].fill(0);
    let damaged = dir.path().join("header_lost.avi");
    std::fs::write(&damaged, bytes).unwrap();
    let m = fixture("nearest_x2.onnx");
    let lost = "the file is named .avi but holds no readable .avi header (FFmpeg reads it as a raw m4v video stream): its container header is damaged (or it is a raw stream misnamed .avi), and any audio or subtitles in it cannot be read";
    let o = upscale(&damaged, &dir.path().join("out.mkv"), &m, &[]);
    assert_exit(&o, 3);
    assert!(stderr(&o).contains(lost), "{}", stderr(&o));
    let o = upscale(
        &damaged,
        &dir.path().join("out.mkv"),
        &m,
        &["--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["input_damage"].to_string().contains(lost), "{v}");
}

/// Two MP4 files joined with `cat`: FFmpeg reads the first movie and skips the second
/// `moov`, so a run would be "complete" with half the content. Refused as damage (exit 3,
/// saying how to join recordings), and with --allow-corrupt upscaled with the reason.
#[test]
fn two_mp4_files_joined_end_to_end_are_refused_not_half_upscaled() {
    let dir = scratch();
    let one = make_clip(dir.path(), "one.mp4", "32x32", 10);
    let bytes = std::fs::read(&one).unwrap();
    let joined = dir.path().join("joined.mp4");
    std::fs::write(&joined, [bytes.clone(), bytes].concat()).unwrap();
    let out = dir.path().join("out.mkv");
    let o = upscale(&joined, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("a second movie ('moov' box) starts at byte")
            && err.contains("only the first would be read"),
        "{err}"
    );
    assert!(!out.exists());
    let o = upscale(
        &joined,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["frames_out"], 10, "{v}");
    let first = v["input_damage"]["first_problem"].as_str().unwrap_or("");
    assert!(first.starts_with("a second movie"), "{v}");
}

/// A video packet zeroed in the middle of a 50-frame MP4 cut into segments of 10: the strict
/// run refuses it and keeps the finished segments; with --allow-corrupt the damaged
/// segment decodes fewer frames than planned, so the plan cannot be kept: that run removes
/// the work folder (made by the run before) and the command it advises then works, not
/// "settings changed ... pass --restart".
#[test]
fn the_advised_command_for_a_damaged_input_that_cannot_be_cut_works() {
    let dir = scratch();
    let d = dir.path();
    let clean = d.join("clean.mp4");
    two_second_clip(&clean, "aac", &[]);
    // The 27th video packet (of 50): a third of it zeroed.
    let (pos, size) = packet_place(&clean, "v:0", 26);
    let mut bytes = std::fs::read(&clean).unwrap();
    bytes[pos + size / 3..pos + 2 * size / 3].fill(0);
    let damaged = d.join("damaged.mp4");
    std::fs::write(&damaged, bytes).unwrap();
    let out = d.join("out.mkv");
    let m = fixture("nearest_x2.onnx");
    let work = d.join(".out.mkv.rave-work");
    let o = upscale(&damaged, &out, &m, &["--segment-frames", "10"]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("pass --allow-corrupt"),
        "{}",
        stderr(&o)
    );
    assert!(work.exists(), "the finished segments are kept");
    let o = upscale(
        &damaged,
        &out,
        &m,
        &["--segment-frames", "10", "--allow-corrupt"],
    );
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains("pass --allow-corrupt --segment-frames 1000000000"),
        "{err}"
    );
    assert!(!work.exists(), "its plan cannot be kept: {err}");
    let o = upscale(
        &damaged,
        &out,
        &m,
        &["--allow-corrupt", "--segment-frames", "1000000000"],
    );
    assert_exit(&o, 0);
    assert!(frame_times(&out).len() >= 45);
    // In a batch, the advice is that command's options with --skip-existing, and works.
    let folder = d.join("batch");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(&damaged, folder.join("damaged.mp4")).unwrap();
    let outs = d.join("outs");
    let batch = |extra: &[&str]| {
        let (i, o) = (folder.to_str().unwrap(), outs.to_str().unwrap());
        let base = ["upscale", "-i", i, "-o", o, "-m", m.to_str().unwrap()];
        run(&[&base[..], extra].concat())
    };
    let o = batch(&["--segment-frames", "10", "--allow-corrupt"]);
    assert_exit(&o, 3);
    assert!(
        stdout(&o)
            .contains("run again with --allow-corrupt --segment-frames 1000000000 --skip-existing"),
        "{}",
        stdout(&o)
    );
    let o = batch(&[
        "--allow-corrupt",
        "--segment-frames",
        "1000000000",
        "--skip-existing",
    ]);
    assert_exit(&o, 0);
}

/// A faststart MP4 cut inside its `moov`: FFmpeg opens what is left as a file with no
/// streams, or a video stream without a size; the refusal names the cut (exit 3).
#[test]
fn an_mp4_cut_inside_its_header_is_refused_as_truncated_not_as_streamless() {
    let dir = scratch();
    let d = dir.path();
    let clean = d.join("fast.mp4");
    lavfi_clip(
        &clean,
        &["testsrc2=size=64x48:rate=25:duration=2", "sine=duration=2"],
        &[
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-movflags",
            "+faststart",
            "-shortest",
        ],
    );
    let bytes = std::fs::read(&clean).unwrap();
    for cut in [150, 300, 400] {
        let input = d.join(format!("cut{cut}.mp4"));
        std::fs::write(&input, &bytes[..cut]).unwrap();
        let o = upscale(&input, &d.join("out.mkv"), &fixture("nearest_x2.onnx"), &[]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("damaged: the file is truncated: box 'moov' at byte 32 declares"),
            "cut at {cut}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Damage in a file that starts at 5 s is placed from the file's start, as a player and
/// the output count time (it said "at 5.640 s" of a 2-second file).
#[test]
fn damage_is_placed_from_the_files_start() {
    let dir = scratch();
    let clean = dir.path().join("late.mkv");
    two_second_clip(
        &clean,
        "ac3",
        &["-output_ts_offset", "5", "-write_crc32", "0"],
    );
    // The 21st audio packet, its middle zeroed (no CRC-32 in the file to catch it first).
    let (pos, size) = packet_place(&clean, "a:0", 20);
    let mut bytes = std::fs::read(&clean).unwrap();
    bytes[pos + 10..pos + size - 10].fill(0);
    let damaged = dir.path().join("damaged.mkv");
    std::fs::write(&damaged, bytes).unwrap();
    let o = upscale(
        &damaged,
        &dir.path().join("out.mkv"),
        &fixture("nearest_x2.onnx"),
        &[],
    );
    assert_exit(&o, 3);
    let err = stderr(&o);
    assert!(err.contains("stream #1: the audio packet at 0.6"), "{err}");
}

/// A Matroska file whose codec name in the track list is damaged (`V_MPEG4/ISO/AVC` becomes
/// `V_MPEC4/...`): FFmpeg knows no such codec, but the element's CRC-32 no longer matches,
/// so the file is damaged, not one to convert (it said "convert the file to H.264").
#[test]
fn a_codec_name_damaged_in_matroska_is_damage_not_an_unknown_codec() {
    let dir = scratch();
    let clean = dir.path().join("clean.mkv");
    two_second_clip(&clean, "aac", &[]);
    let mut data = std::fs::read(&clean).unwrap();
    let at = data
        .windows(7)
        .position(|w| w == b"V_MPEG4")
        .expect("the codec name");
    data[at + 5] ^= 4;
    let damaged = dir.path().join("damaged.mkv");
    std::fs::write(&damaged, &data).unwrap();
    let out = dir.path().join("out.mkv");
    for extra in [&[][..], &["--allow-corrupt"]] {
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), extra);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("damaged: CRC-32 mismatch in the Matroska track list")
                && err.contains("not one FFmpeg recognises")
                && !err.contains("convert the file"),
            "{extra:?}: {err}"
        );
        assert!(!out.exists());
    }
}
