//! Damage inside the audio RAVE copies: the plan decodes every audio packet while it reads
//! the input, so audio whose bytes were overwritten, zeroed or flipped (its container intact)
//! is refused before any work, in every container, and counted when --allow-corrupt keeps
//! it. Clean audio, a stream-copy cut included, is not.

mod common;

use std::path::Path;

use common::*;

/// Overwrite the second half of three audio packets in the middle of stream a:0, found by
/// their byte positions (every container but MPEG-TS, whose packets are split).
fn damage_audio_packets(src: &Path, dst: &Path) {
    let listed = ffprobe(
        src,
        &[
            "-select_streams",
            "a:0",
            "-show_entries",
            "packet=pos,size",
            "-of",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let packets = v["packets"].as_array().unwrap();
    let mut data = std::fs::read(src).unwrap();
    let mid = packets.len() / 2;
    for p in &packets[mid..mid + 3] {
        let pos: usize = p["pos"].as_str().unwrap().parse().unwrap();
        let size: usize = p["size"].as_str().unwrap().parse().unwrap();
        for (i, b) in data[pos + size / 4..pos + size - 2].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(151).wrapping_add(89);
        }
    }
    std::fs::write(dst, data).unwrap();
}

/// Overwrite the payload of two transport packets of the audio in the middle of `src`
/// (none that starts a PES packet, whose header stays intact).
fn damage_ts_audio(src: &Path, dst: &Path) {
    let ids = ffprobe(
        src,
        &[
            "-select_streams",
            "a:0",
            "-show_entries",
            "stream=id",
            "-of",
            "csv=p=0",
        ],
    );
    let id = ids.split_whitespace().next().unwrap();
    let pid = u16::from_str_radix(id.trim_start_matches("0x"), 16).unwrap();
    let mut data = std::fs::read(src).unwrap();
    let audio: Vec<usize> = (0..data.len() / 188)
        .map(|n| n * 188)
        .filter(|&i| {
            u16::from(data[i + 1] & 0x1f) << 8 | u16::from(data[i + 2]) == pid
                && data[i + 1] & 0x40 == 0
        })
        .collect();
    for &i in &audio[audio.len() / 2..audio.len() / 2 + 2] {
        let mut payload = i + 4;
        if data[i + 3] & 0x20 != 0 {
            payload += 1 + data[i + 4] as usize;
        }
        for (k, b) in data[payload + 8..i + 188].iter_mut().enumerate() {
            *b = (k as u8).wrapping_mul(151).wrapping_add(89);
        }
    }
    std::fs::write(dst, data).unwrap();
}

/// A 2 s clip at 25 fps with a tone in `audio` (FFmpeg encoder arguments), H.264 unless
/// they name a video encoder.
fn clip(path: &Path, audio: &[&str]) {
    let mut args = match audio.contains(&"-c:v") {
        true => vec!["-g", "10"],
        false => vec!["-c:v", "libx264", "-g", "10"],
    };
    args.extend_from_slice(audio);
    lavfi_clip(
        path,
        &[
            "testsrc2=size=64x48:rate=25:duration=2",
            "sine=frequency=500:sample_rate=48000:duration=2",
        ],
        &args,
    );
}

#[test]
fn damaged_audio_is_refused_before_work_in_every_container() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    // (file, audio encoding, packets the damage reaches): AAC's and ALAC's decoders refuse
    // damaged bands, AC-3's frame CRC, Vorbis its overread; Matroska without its own
    // CRC-32s (which would catch the damage first).
    let cases: [(&str, &[&str], Option<u64>); 7] = [
        ("aac.mp4", &["-c:a", "aac"], Some(3)),
        ("alac.mov", &["-c:a", "alac"], Some(3)),
        ("aac.flv", &["-c:a", "aac"], Some(3)),
        ("ac3.mkv", &["-c:a", "ac3", "-write_crc32", "0"], Some(3)),
        (
            "vorbis.webm",
            &[
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
                "-c:a",
                "libvorbis",
            ],
            Some(3),
        ),
        ("ac3.avi", &["-c:a", "ac3"], Some(3)),
        ("aac.ts", &["-c:a", "aac"], None),
    ];
    for (name, audio, count) in cases {
        let clean = d.join(format!("clean-{name}"));
        clip(&clean, audio);
        let damaged = d.join(format!("damaged-{name}"));
        if name.ends_with(".ts") {
            damage_ts_audio(&clean, &damaged);
        } else {
            damage_audio_packets(&clean, &damaged);
        }
        let out = d.join(format!("{name}.out.mkv"));
        let o = upscale(&clean, &out, &m, &["--json"]);
        assert_exit(&o, 0);

        let out = d.join(format!("{name}.damaged.mkv"));
        let o = upscale(&damaged, &out, &m, &["--json"]);
        assert_exit(&o, 3);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["error"]["kind"], "corrupt_stream", "{name}: {v}");
        let damage = &v["error"]["damage"];
        let n = damage["audio_packets_damaged"].as_u64().unwrap();
        match count {
            Some(c) => assert_eq!(n, c, "{name}: {damage}"),
            None => assert!((1..=3).contains(&n), "{name}: {damage}"),
        }
        assert_eq!(damage["frames_missing"], 0, "{name}: {damage}");
        let first = damage["first_problem"].as_str().unwrap();
        assert!(
            first.starts_with("stream #1: the audio packet at ")
                && first.ends_with("its bytes are damaged"),
            "{name}: {first}"
        );
        assert!(!out.exists(), "{name}: refused but {out:?} exists");
        assert!(
            !d.join(format!(".{name}.damaged.mkv.rave-work")).exists(),
            "{name}: refused before work, yet a work folder was made"
        );
    }
}

#[test]
fn allowed_damaged_audio_is_copied_whole_and_counted() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    let clean = d.join("clean.mp4");
    clip(&clean, &["-c:a", "aac"]);
    let damaged = d.join("damaged.mp4");
    damage_audio_packets(&clean, &damaged);
    let out = d.join("out.mkv");
    // Several segments: the final report holds the plan's audio count all the same.
    for extra in [&["--segment-frames", "10"][..], &[][..]] {
        let mut args = vec!["--allow-corrupt", "--overwrite"];
        args.extend_from_slice(extra);
        let o = upscale(&damaged, &out, &m, &args);
        assert_exit(&o, 0);
        let err = stderr(&o);
        assert!(
            err.contains("damaged input (kept with --allow-corrupt): 3 audio packets damaged (they do not decode)"),
            "{extra:?}: {err}"
        );
        assert_eq!(
            packet_count(&out, "a:0"),
            packet_count(&damaged, "a:0"),
            "{extra:?}: every audio packet is copied"
        );
        assert_eq!(packet_count(&out, "v:0"), 50);
    }
}

#[test]
fn a_stream_copy_cut_and_several_audio_streams_are_clean() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    // MP3 cut by a stream copy starts on a frame whose bit reservoir lies before the cut.
    let whole = d.join("mp3.mp4");
    clip(&whole, &["-c:a", "libmp3lame"]);
    let cut = d.join("cut.mp4");
    ffmpeg(&[
        "-ss",
        "0.77",
        "-i",
        whole.to_str().unwrap(),
        "-c",
        "copy",
        cut.to_str().unwrap(),
    ]);
    let two = d.join("two.mkv");
    lavfi_clip(
        &two,
        &[
            "testsrc2=size=64x48:rate=25:duration=2",
            "sine=frequency=500:sample_rate=48000:duration=2",
            "anoisesrc=color=pink:sample_rate=48000:duration=2",
        ],
        &[
            "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-c:a:0", "aac", "-c:a:1",
            "flac",
        ],
    );
    // ALAC in Matroska: no packet carries a duration; the audio ends a packet after the
    // last one starts, not at its start (it was refused as 0.03 s short).
    let alac = d.join("alac.mkv");
    clip(&alac, &["-c:a", "alac"]);
    for input in [&whole, &cut, &two, &alac] {
        let out = d.join("out.mkv");
        let o = upscale(input, &out, &m, &["--overwrite"]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("damaged"), "{input:?}: {}", stderr(&o));
    }
}
