//! Targeted damage of FLV files, beside the corpus run (damage_corpus.rs): a truncated FLV
//! that starts after zero, a tag whose codec flags are damaged (FFmpeg makes a stream of
//! another codec of it), and a tag whose timestamp leaps far ahead.

mod common;

use common::*;

/// Two seconds of 64x48 H.264 with AAC sound in an FLV at `path`, `extra` more output
/// options.
fn two_second_flv(path: &std::path::Path, extra: &[&str]) {
    let options = [&["-c:v", "libx264", "-c:a", "aac"][..], extra].concat();
    lavfi_clip(
        path,
        &["testsrc2=size=64x48:rate=25:duration=2", "sine=duration=2"],
        &options,
    );
}

/// An FLV whose timeline starts at 1.5 s declares a duration a reader cannot tell from a
/// timeline end (FFmpeg's FLV muxer writes the span, its Matroska muxer the end), so the
/// duration alone misses a cut at 90%: the chain of FLV tags, each followed by its length,
/// is what shows it, wherever the file ends.
#[test]
fn a_truncated_flv_starting_after_zero_is_refused() {
    let dir = scratch();
    let clean = dir.path().join("offset.flv");
    two_second_flv(&clean, &["-output_ts_offset", "1.5"]);
    let data = std::fs::read(&clean).unwrap();
    for pct in [50, 80, 90, 97] {
        let cut = dir.path().join(format!("cut{pct}.flv"));
        std::fs::write(&cut, &data[..data.len() * pct / 100]).unwrap();
        let out = dir.path().join(format!("cut{pct}.mkv"));
        let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["error"]["damage"]["truncated"], true, "{pct}%: {v}");
        assert!(!out.exists());
    }
}

/// Where each FLV tag of `data` starts, with its type (8 audio, 9 video, 18 script data).
fn flv_tags(data: &[u8]) -> Vec<(usize, u8)> {
    let header = u32::from_be_bytes(data[5..9].try_into().unwrap()) as usize;
    let mut at = header + 4;
    let mut tags = Vec::new();
    while at + 11 <= data.len() {
        let size = u32::from_be_bytes([0, data[at + 1], data[at + 2], data[at + 3]]) as usize;
        tags.push((at, data[at] & 0x1f));
        at += 11 + size + 4;
    }
    tags
}

/// One audio tag whose codec nibble is damaged (AAC becomes Speex): FFmpeg opens a second
/// audio stream of it, which no container but QuickTime takes. That stream is damage, not
/// content: refused as damage naming it (exit 3, not "write to .mov"), and with
/// --allow-corrupt left out of the output (the real audio copied), in every container.
#[test]
fn a_damaged_flv_tag_is_damage_not_a_second_audio_stream() {
    let dir = scratch();
    let clean = dir.path().join("clean.flv");
    two_second_flv(&clean, &[]);
    let mut data = std::fs::read(&clean).unwrap();
    let audio: Vec<usize> = flv_tags(&data)
        .into_iter()
        .filter(|&(_, kind)| kind == 8)
        .map(|(at, _)| at)
        .collect();
    assert!(audio.len() > 40, "{} audio tags", audio.len());
    let flags = audio[30] + 11;
    assert_eq!(data[flags] >> 4, 10, "an AAC tag");
    data[flags] = (11 << 4) | (data[flags] & 0x0f);
    let damaged = dir.path().join("damaged.flv");
    std::fs::write(&damaged, &data).unwrap();
    assert!(streams(&damaged).contains("speex"), "{}", streams(&damaged));

    for ext in ["mkv", "mp4", "mov"] {
        let out = dir.path().join(format!("out.{ext}"));
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
        assert_exit(&o, 3);
        let err = stderr(&o);
        assert!(
            err.contains("damaged input") && err.contains("an FLV tag whose codec flags disagree"),
            "{ext}: {err}"
        );
        assert!(!out.exists());

        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--allow-corrupt", "--json"],
        );
        assert_exit(&o, 0);
        let v = json_report(&o);
        let skipped = v["mux"]["skipped_streams"].to_string();
        assert!(
            skipped.contains("made by FFmpeg of a damaged FLV tag"),
            "{ext}: {v}"
        );
        assert_eq!(v["input_damage"]["demux_errors"], 1, "{ext}: {v}");
        let kept = streams(&out);
        assert_eq!(kept.matches("stream|").count(), 2, "{ext}: {kept}");
        assert!(
            kept.contains("aac") && !kept.contains("speex"),
            "{ext}: {kept}"
        );
    }
}

/// One FLV tag whose timestamp has a high bit flipped (its extension byte): a video frame
/// 2^31 ms late, or an audio packet 2^26 ms late. Taken as it was, the leap wedged the
/// timeline: every good audio packet after it was dropped as going backwards (the run
/// finished with 39 of 142 and an 18-hour duration), and the video leap failed the muxer
/// (exit 4, FFmpeg's "not yet implemented" naming a hidden segment file). Now it is damage:
/// refused, and with --allow-corrupt the frame is kept untimed (every frame out) and the
/// audio packet put back where the one before it ended (every packet out), the output as
/// long as the input.
#[test]
fn a_timestamp_leaping_far_ahead_is_damage_that_wedges_nothing() {
    let dir = scratch();
    let clean = dir.path().join("clean.flv");
    two_second_flv(&clean, &[]);
    let frames = counted_frames(&clean);
    let clean_out = dir.path().join("clean.mkv");
    assert_exit(
        &upscale(&clean, &clean_out, &fixture("nearest_x2.onnx"), &[]),
        0,
    );
    // The third case: the 30th video tag and the audio tag right after it, both in one
    // read-ahead (the second was handed out unjudged, and wedged the audio again).
    for (kind, high_bit) in [(9u8, 0x80u8), (8, 0x04), (0, 0)] {
        let mut data = std::fs::read(&clean).unwrap();
        let tags = flv_tags(&data);
        let nth = |k: u8| {
            tags.iter()
                .filter(|&&(_, t)| t == k)
                .nth(30)
                .expect("a tag")
                .0
        };
        match kind {
            0 => {
                let video = nth(9);
                let audio_after = tags
                    .iter()
                    .find(|&&(at, t)| t == 8 && at > video)
                    .expect("an audio tag after it")
                    .0;
                data[video + 7] |= 0x80;
                data[audio_after + 7] |= 0x04;
            }
            _ => data[nth(kind) + 7] |= high_bit,
        }
        let damaged = dir.path().join(format!("leap{kind}.flv"));
        std::fs::write(&damaged, &data).unwrap();
        let out = dir.path().join(format!("leap{kind}.mkv"));
        let o = upscale(&damaged, &out, &fixture("nearest_x2.onnx"), &[]);
        assert_exit(&o, 3);
        assert!(stderr(&o).contains("timestamp leaps"), "{}", stderr(&o));
        let o = upscale(
            &damaged,
            &out,
            &fixture("nearest_x2.onnx"),
            &["--allow-corrupt"],
        );
        assert_exit(&o, 0);
        assert_eq!(counted_frames(&out), frames, "tag type {kind}");
        assert_same_audio(&out, &clean_out, &format!("tag type {kind}"));
        let duration = format_duration(&out);
        assert!(duration < 2.5, "tag type {kind}: {duration} s");
    }
}

/// An FLV of `seconds` whose audio switches codec for good at `switch_ms` (a publisher
/// that reconnected with another encoder: MP3, then AAC), in `dir`.
fn switched_flv(dir: &std::path::Path, seconds: u32, switch_ms: u32) -> std::path::PathBuf {
    let make = |name: &str, audio: &str| {
        let path = dir.join(name);
        lavfi_clip(
            &path,
            &[
                &format!("testsrc2=size=64x48:rate=25:duration={seconds}"),
                &format!("sine=duration={seconds}"),
            ],
            &["-c:v", "libx264", "-threads", "1", "-c:a", audio],
        );
        std::fs::read(path).unwrap()
    };
    let (mp3, aac) = (make("mp3.flv", "libmp3lame"), make("aac.flv", "aac"));
    let header = u32::from_be_bytes(mp3[5..9].try_into().unwrap()) as usize + 4;
    let tag_at = |data: &[u8], at: usize| {
        let size = u32::from_be_bytes([0, data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let ms = u32::from_be_bytes([data[at + 7], data[at + 4], data[at + 5], data[at + 6]]);
        (ms, data[at..at + 11 + size + 4].to_vec())
    };
    // (time, order, tag): the video and script tags and MP3 before the switch from the
    // first file; AAC's configuration and its tags from the switch on from the second.
    let mut tags: Vec<(u32, u8, Vec<u8>)> = Vec::new();
    for (data, is_mp3) in [(&mp3, true), (&aac, false)] {
        for (at, kind) in flv_tags(data) {
            let (ms, tag) = tag_at(data, at);
            let aac_config = !is_mp3 && kind == 8 && data[at + 12] == 0;
            let keep = match (is_mp3, kind) {
                (true, 8) => ms < switch_ms,
                (true, _) => true,
                (false, 8) => ms >= switch_ms || aac_config,
                (false, _) => false,
            };
            if keep {
                let ms = if aac_config { switch_ms } else { ms };
                let mut tag = tag;
                tag[4..7].copy_from_slice(&ms.to_be_bytes()[1..]);
                tag[7] = (ms >> 24) as u8;
                tags.push((ms, u8::from(!aac_config), tag));
            }
        }
    }
    tags.sort_by_key(|(ms, order, _)| (*ms, *order));
    let mut switched = mp3[..header].to_vec();
    for (_, _, tag) in tags {
        switched.extend(tag);
    }
    let input = dir.join("switched.flv");
    std::fs::write(&input, &switched).unwrap();
    input
}

/// An FLV whose audio switches codec for good early (0.3 s, within what FFmpeg reads to
/// open the file): two audio streams, both content, both copied; only a codec a handful of
/// tags name is a damaged tag's phantom.
#[test]
fn an_flv_whose_audio_switches_codec_for_good_keeps_both_streams() {
    let dir = scratch();
    let input = switched_flv(dir.path(), 2, 300);
    let kinds = streams(&input);
    assert!(kinds.contains("mp3") && kinds.contains("aac"), "{kinds}");
    let out = dir.path().join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    let kept = streams(&out);
    assert!(kept.contains("mp3") && kept.contains("aac"), "{kept}");
}

/// The same switch at 2 s of 4: FFmpeg meets the AAC stream only after opening the file,
/// when the output's streams are fixed, so its audio cannot be copied. The run finished
/// "complete" without it, two seconds of sound gone unsaid; it is refused now, and with
/// --allow-corrupt the packets left out are counted.
#[test]
fn audio_that_appears_only_after_the_file_is_opened_is_not_lost_unsaid() {
    let dir = scratch();
    let input = switched_flv(dir.path(), 4, 2000);
    assert!(
        !streams(&input).contains("aac"),
        "found at opening: {}",
        streams(&input)
    );
    let out = dir.path().join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("appears only after the start FFmpeg reads to open the file"),
        "{}",
        stderr(&o)
    );
    let o = upscale(
        &input,
        &out,
        &fixture("nearest_x2.onnx"),
        &["--allow-corrupt", "--json"],
    );
    assert_exit(&o, 0);
    let dropped = json_report(&o)["input_damage"]["packets_dropped"]
        .as_u64()
        .unwrap();
    assert!(dropped > 40, "{dropped} packets counted");
}
