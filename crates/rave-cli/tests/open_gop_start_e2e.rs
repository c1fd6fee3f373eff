//! A capture cut inside an open GOP (H.264 open-gop, HEVC CRA pictures, MPEG-2 GOPs without
//! closed_gop): the pictures coded right after its first keyframe but shown before it refer
//! back to the GOP the cut removed. They are skipped with the packets before the keyframe
//! and said; every frame from the keyframe on is upscaled, right, and every audio packet
//! kept. (Before, the H.264 cut was refused as damaged, and the HEVC and MPEG-2 decoders
//! dropped the pictures without a word: a job with --max-frames 5 wrote 4 or 3 frames and
//! said it was complete.)

mod common;

use common::*;
use std::path::Path;

/// (pts, keyframe) of every video packet, in decoding order.
fn video_packets(path: &Path) -> Vec<(i64, bool)> {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "packet=pts,flags",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .filter_map(|l| {
        let (pts, flags) = l.trim().split_once(',')?;
        Some((pts.parse().ok()?, flags.starts_with('K')))
    })
    .collect()
}

/// Cut `whole` at a transport packet a third of the way in; the first keyframe's pts and
/// the number of the cut's video packets shown from it on.
fn cut_a_third_in(whole: &Path, cut: &Path) -> (i64, usize) {
    let data = std::fs::read(whole).unwrap();
    std::fs::write(cut, &data[188 * (data.len() / 188 / 3)..]).unwrap();
    let packets = video_packets(cut);
    let first_key = packets.iter().position(|p| p.1).expect("a keyframe");
    let key_pts = packets[first_key].0;
    let leading_pictures = packets[first_key + 1..]
        .iter()
        .take_while(|p| p.0 < key_pts)
        .count();
    assert!(
        leading_pictures > 0,
        "the keyframe opens an open GOP: {packets:?}"
    );
    (key_pts, packets.iter().filter(|p| p.0 >= key_pts).count())
}

/// A 4 s MPEG-TS of `video` with AAC audio at `d/whole_NAME.ts`.
fn whole_ts(d: &Path, name: &str, video: &[&str]) -> std::path::PathBuf {
    let whole = d.join(format!("whole_{name}.ts"));
    let mut args = video.to_vec();
    args.extend(["-c:a", "aac"]);
    lavfi_clip(
        &whole,
        &[
            "testsrc2=size=64x48:rate=25:duration=4",
            "sine=frequency=300:sample_rate=48000:duration=4",
        ],
        &args,
    );
    whole
}

/// The options of a lossless upscale (the same bytes wherever a frame is right).
const LOSSLESS: [&str; 6] = ["--json", "--overwrite", "--encoder", "x264", "--crf", "0"];

/// `whole` upscaled losslessly to `d/whole_NAME.mkv`, decoded.
fn upscaled_reference(d: &Path, name: &str, whole: &Path) -> Vec<u8> {
    let out = d.join(format!("whole_{name}.mkv"));
    assert_exit(
        &upscale(whole, &out, &fixture("nearest_x2.onnx"), &LOSSLESS),
        0,
    );
    decode_yuv420(&out)
}

/// `frames` frames of `yuv` (planar 4:2:0 of `w`x`h`) from frame `from`.
fn frames_from(yuv: &[u8], (w, h): (usize, usize), from: usize, frames: usize) -> &[u8] {
    let size = w * h * 3 / 2;
    &yuv[from * size..(from + frames) * size]
}

#[test]
fn a_capture_cut_inside_an_open_gop_is_upscaled_from_its_first_keyframe() {
    let dir = scratch();
    let d = dir.path();
    let codecs: [(&str, &[&str]); 3] = [
        (
            "h264",
            &[
                "-c:v",
                "libx264",
                "-threads",
                "1",
                "-g",
                "25",
                "-bf",
                "3",
                "-x264-params",
                "open-gop=1",
            ],
        ),
        (
            "hevc",
            &[
                "-c:v",
                "libx265",
                "-x265-params",
                "log-level=error:keyint=25:open-gop=1:bframes=3:frame-threads=1:pools=none",
            ],
        ),
        (
            "mpeg2",
            &["-c:v", "mpeg2video", "-g", "25", "-bf", "2", "-q:v", "4"],
        ),
    ];
    for (name, video) in codecs {
        let whole = whole_ts(d, name, video);
        let cut = d.join(format!("capture_{name}.ts"));
        let (key_pts, shown) = cut_a_third_in(&whole, &cut);
        let leading = video_packets(&cut).len() - shown;
        // Where the keyframe's picture is in the whole file, and the whole file upscaled
        // the same way (losslessly encoded: the same bytes wherever a frame is right).
        let mut whole_pts: Vec<i64> = video_packets(&whole).iter().map(|p| p.0).collect();
        whole_pts.sort_unstable();
        let key_at = whole_pts.partition_point(|&p| p < key_pts);
        let reference = upscaled_reference(d, name, &whole);
        // One segment, several, and the first five frames only.
        for extra in [&[][..], &["--segment-frames", "10"], &["--max-frames", "5"]] {
            let out = d.join(format!("out_{name}.mkv"));
            let mut args = LOSSLESS.to_vec();
            args.extend_from_slice(extra);
            let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &args);
            assert_exit(&o, 0);
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let damage = &v["input_damage"];
            assert_eq!(
                damage["frames_before_first_keyframe"], leading,
                "{name} {extra:?}: {v}"
            );
            for count in ["frames_missing", "demux_errors", "decoder_errors"] {
                assert_eq!(damage[count], 0, "{name} {extra:?} {count}: {v}");
            }
            assert!(
                stderr(&o).contains("the input starts mid-GOP"),
                "{}",
                stderr(&o)
            );
            let frames = match extra.first() == Some(&"--max-frames") {
                true => 5,
                false => shown,
            };
            assert_eq!(v["frames_out"], frames as u64, "{name} {extra:?}: {v}");
            // Each frame is the picture the whole file shows at its place: none lost or
            // shifted, none concealed from missing references.
            let got = decode_yuv420(&out);
            let want = frames_from(&reference, (128, 96), key_at, frames);
            assert_eq!(got.len(), want.len(), "{name} {extra:?}");
            assert!(
                got == want,
                "{name} {extra:?}: not the whole file's frames from the keyframe on ({:.1} dB)",
                psnr(&got, want)
            );
            if extra.is_empty() {
                assert_eq!(
                    packet_count(&out, "a:0"),
                    packet_count(&cut, "a:0"),
                    "{name}: every audio packet"
                );
            }
        }
    }
}

/// Leading pictures predicted from the keyframe alone (HEVC RADL pictures) decode in a cut:
/// they are kept, and only the packets before the keyframe are skipped. (FFmpeg's MPEG-2
/// encoder starts its closed GOPs without leading B-frames, so that case has only its unit
/// test, `decodable_leading`.)
#[test]
fn leading_pictures_that_decode_from_the_keyframe_are_kept() {
    let dir = scratch();
    let d = dir.path();
    let name = "hevc_radl";
    let whole = whole_ts(
        d,
        name,
        &[
            "-c:v",
            "libx265",
            "-x265-params",
            "log-level=error:keyint=12:min-keyint=12:open-gop=0:radl=2:bframes=4:frame-threads=1:pools=none",
        ],
    );
    let cut = d.join(format!("capture_{name}.ts"));
    let data = std::fs::read(&whole).unwrap();
    std::fs::write(&cut, &data[188 * (data.len() / 188 / 2)..]).unwrap();
    let packets = video_packets(&cut);
    let first_key = packets.iter().position(|p| p.1).expect("a keyframe");
    let key_pts = packets[first_key].0;
    let kept = &packets[first_key..];
    assert!(
        kept.iter().any(|p| p.0 < key_pts),
        "{name}: the keyframe has leading pictures: {packets:?}"
    );
    let first_shown = kept.iter().map(|p| p.0).min().unwrap();
    let mut whole_pts: Vec<i64> = video_packets(&whole).iter().map(|p| p.0).collect();
    whole_pts.sort_unstable();
    let at = whole_pts.partition_point(|&p| p < first_shown);
    let reference = upscaled_reference(d, name, &whole);
    let out = d.join(format!("out_{name}.mkv"));
    let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &LOSSLESS);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["input_damage"]["frames_before_first_keyframe"], first_key,
        "{name}: {v}"
    );
    assert_eq!(v["frames_out"], kept.len(), "{name}: {v}");
    let got = decode_yuv420(&out);
    let want = frames_from(&reference, (128, 96), at, kept.len());
    assert!(
        got == want,
        "{name}: the uncut file's frames from the first shown on"
    );
}

/// A stream copy cut out of H.264 with open GOPs (x264 open-gop) into MP4, MOV or
/// Matroska: it starts on the recovery point before the cut (in MP4 its pictures before
/// the cut hidden by the edit list), and the decoder says of the references before it
/// "Frame num gap" and "mmco: unref short failure". Those are stale (no picture shown is
/// damaged by them), yet every such cut was refused as damaged, decoding stopped after 9
/// frames; in Matroska the leading pictures come untimed and counted as missing. Now
/// upscaled, every frame FFmpeg reads out of the cut.
#[test]
fn a_copy_cut_of_h264_with_open_gops_is_no_damage() {
    let dir = scratch();
    let d = dir.path();
    let whole = d.join("open.mp4");
    lavfi_clip(
        &whole,
        &["testsrc2=size=96x64:rate=25:duration=6"],
        &[
            "-c:v",
            "libx264",
            "-bf",
            "3",
            "-x264-params",
            "keyint=25:open-gop=1",
        ],
    );
    for ext in ["mp4", "mov", "mkv"] {
        let cut = d.join(format!("cut.{ext}"));
        let (w, c) = (whole.to_str().unwrap(), cut.to_str().unwrap());
        ffmpeg(&["-ss", "1.3", "-i", w, "-t", "2", "-c", "copy", c]);
        let out = d.join(format!("cut-{ext}.mkv"));
        let o = upscale(&cut, &out, &fixture("nearest_x2.onnx"), &[]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("Frame num gap"), "{}", stderr(&o));
        assert_eq!(counted_frames(&out), counted_frames(&cut), "{ext}");
    }
}

/// A DVD-like MPEG-PS (MPEG-2 with open GOPs; AC-3 in a VOB, MP2 in an .mpg) cut at a
/// 2048-byte pack: its first keyframe has no timestamp (a program stream times only the
/// PES a picture starts in), so the two B-pictures coded after it, which refer back to the
/// GOP the cut removed, are told by their picture type: skipped and said with the packets
/// before the keyframe, every other frame upscaled, every audio packet copied, exit 0. (They
/// were decoded, dropped by the decoder and the cut refused: "at least 2 video frames
/// missing"; an MP2 frame the cut split in two was refused as audio that does not decode.)
#[test]
fn a_program_stream_cut_inside_an_open_gop_starts_at_its_keyframe() {
    let dir = scratch();
    for (format, audio) in [("vob", "ac3"), ("mpeg", "mp2")] {
        let whole = dir.path().join(format!("whole.{format}"));
        lavfi_clip(
            &whole,
            &["testsrc2=s=96x64:r=25:d=8", "sine=f=440:r=48000:d=8"],
            &[
                "-c:v",
                "mpeg2video",
                "-g",
                "12",
                "-bf",
                "2",
                "-b:v",
                "800k",
                "-c:a",
                audio,
                "-b:a",
                "192k",
                "-f",
                format,
            ],
        );
        let data = std::fs::read(&whole).unwrap();
        let packs = data.len() / 2048;
        for percent in [20, 37, 50] {
            let what = format!("{format} cut at {percent}%");
            let cut = dir.path().join(format!("cut{percent}.{format}"));
            std::fs::write(&cut, &data[packs * percent / 100 * 2048..]).unwrap();
            // Every video packet's flags, timed or not, in decoding order.
            let flags = ffprobe(
                &cut,
                &[
                    "-select_streams",
                    "v:0",
                    "-show_entries",
                    "packet=flags",
                    "-of",
                    "csv=p=0",
                ],
            );
            let keys: Vec<bool> = flags.lines().map(|l| l.starts_with('K')).collect();
            let from_key = keys.len() - keys.iter().position(|&k| k).unwrap();
            let out = dir.path().join("out.mkv");
            let o = upscale(
                &cut,
                &out,
                &fixture("nearest_x2.onnx"),
                &["--json", "--overwrite"],
            );
            assert_exit(&o, 0);
            assert!(
                stderr(&o).contains("the input starts mid-GOP"),
                "{what}: {}",
                stderr(&o)
            );
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            for count in ["frames_missing", "decoder_errors", "audio_packets_damaged"] {
                assert_eq!(v["input_damage"][count], 0, "{what} {count}: {v}");
            }
            // The keyframe and all after it but its two leading B-pictures.
            assert_eq!(v["frames_out"], (from_key - 2) as u64, "{what}: {v}");
            assert_eq!(
                packet_count(&out, "a:0"),
                packet_count(&cut, "a:0"),
                "{what}"
            );
        }
    }
}
