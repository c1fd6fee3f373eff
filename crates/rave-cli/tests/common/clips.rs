//! Fixture clips made with the ffmpeg CLI (and scripts/make_sample_clip.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{chapters, ffmpeg, packets, repo, stderr, streams};

/// Four seconds of 64x48 H.264 (with B-frames) and 48 kHz AAC at `path`; Matroska without
/// CRC-32 elements, so a damaged block is told by its times only. The clean input of the
/// timestamp damage cases.
pub fn four_second_h264_aac(path: &Path) {
    let crc = match path.extension().is_some_and(|e| e == "mkv") {
        true => &["-write_crc32", "0"][..],
        false => &[],
    };
    lavfi_clip(
        path,
        &[
            "testsrc2=size=64x48:rate=25:duration=4",
            "sine=sample_rate=48000:duration=4",
        ],
        &[&["-c:v", "libx264", "-c:a", "aac"][..], crc].concat(),
    );
}

/// HEVC by x265 with open GOPs (CRA pictures every 48) and three B-frames, quietly.
pub const HEVC_OPEN_GOP: &[&str] = &[
    "-c:v",
    "libx265",
    "-x265-params",
    "log-level=error:keyint=48",
    "-bf",
    "3",
];

/// A 6-s MPEG-TS recording at `path` of `video` (a lavfi source, 160x90 at 25 fps) with an
/// MP2 tone, the picture coded by `codec`, its clock at `offset` seconds; its bytes.
pub fn ts_recording(path: &Path, video: &str, codec: &[&str], offset: &str) -> Vec<u8> {
    let mut args = vec!["-t", "6"];
    args.extend_from_slice(codec);
    args.extend(["-c:a", "mp2", "-output_ts_offset", offset]);
    let source = format!("{video}=size=160x90:rate=25");
    lavfi_clip(
        path,
        &[&source, "sine=frequency=440:sample_rate=48000"],
        &args,
    );
    std::fs::read(path).unwrap()
}

/// Run ffmpeg with one lavfi input for each of `sources`, in order, then `output_args`, into
/// `path`.
pub fn lavfi_clip(path: &Path, sources: &[&str], output_args: &[&str]) {
    let mut args = Vec::new();
    for source in sources {
        args.extend(["-f", "lavfi", "-i", source]);
    }
    args.extend_from_slice(output_args);
    args.push(path.to_str().unwrap());
    ffmpeg(&args);
}

/// ffmpeg copying `first`'s streams and those `second_map` picks of `second` (`"1"`, `"1:s"`)
/// into `out`, `extra` (codec tags, dispositions) before it; the streams are not re-encoded.
pub fn mux_copy(first: &Path, second: &Path, second_map: &str, extra: &[&str], out: &Path) {
    let (a, b) = (first.to_str().unwrap(), second.to_str().unwrap());
    let mut args = vec![
        "-i", a, "-i", b, "-map", "0", "-map", second_map, "-c", "copy",
    ];
    args.extend_from_slice(extra);
    args.push(out.to_str().unwrap());
    ffmpeg(&args);
}

/// A small H.264 + AAC MP4 of moving test content (`frames` frames at 25 fps), tagged BT.709.
pub fn make_clip(dir: &Path, name: &str, size: &str, frames: u32) -> PathBuf {
    let path = dir.join(name);
    let secs = format!("{}", f64::from(frames) / 25.0);
    lavfi_clip(
        &path,
        &[
            &format!("testsrc2=size={size}:rate=25:duration={secs}"),
            &format!("sine=frequency=440:sample_rate=48000:duration={secs}"),
        ],
        &[
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-crf",
            "12",
            "-pix_fmt",
            "yuv420p",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
            "-colorspace",
            "bt709",
            "-c:a",
            "aac",
            "-b:a",
            "96k",
            "-shortest",
        ],
    );
    path
}

/// A clip of real photographs (pan and zoom) with stereo AAC, by scripts/make_sample_clip.sh.
pub fn make_photo_clip(dir: &Path, name: &str, w: u32, h: u32, frames: u32) -> PathBuf {
    let path = dir.join(name);
    let o = Command::new("bash")
        .arg(repo().join("scripts/make_sample_clip.sh"))
        .arg(&path)
        .args([w.to_string(), h.to_string(), frames.to_string()])
        .output()
        .expect("bash");
    assert!(o.status.success(), "make_sample_clip.sh: {}", stderr(&o));
    path
}

/// A VFR H.264 MKV with Opus audio, SubRip subtitles, a font attachment, two chapters and
/// a title; `video` (GOP options, say) goes after the video codec.
pub fn rich_mkv(dir: &Path, video: &[&str]) -> PathBuf {
    let subs = dir.join("subs.srt");
    std::fs::write(
        &subs,
        "1\n00:00:00,100 --> 00:00:00,500\nHello\n\n2\n00:00:00,600 --> 00:00:00,900\nWorld\n",
    )
    .unwrap();
    let meta = dir.join("meta.txt");
    std::fs::write(&meta, ";FFMETADATA1\ntitle=RAVE test clip\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=400\ntitle=Opening\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=400\nEND=1000\ntitle=Ending\n").unwrap();
    let font = dir.join("font.ttf");
    std::fs::write(&font, b"not really a font").unwrap();
    let out = dir.join("rich.mkv");
    let mut args = vec![
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=48x32:rate=25:duration=1",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=300:duration=1",
        "-i",
        subs.to_str().unwrap(),
        "-i",
        meta.to_str().unwrap(),
        "-map",
        "0:v",
        "-map",
        "1:a",
        "-map",
        "2:s",
        "-map_metadata",
        "3",
        "-map_chapters",
        "3",
        // Frames 10.. come 70 ms apart instead of 40: variable frame rate.
        "-vf",
        "setpts='N*40/1000/TB+if(gte(N,10),(N-9)*30/1000/TB,0)'",
        "-vsync",
        "passthrough",
        "-c:v",
        "libx264",
    ];
    args.extend_from_slice(video);
    args.extend([
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "libopus",
        "-c:s",
        "srt",
        "-attach",
        font.to_str().unwrap(),
        "-metadata:s:t",
        "mimetype=application/x-truetype-font",
        "-metadata:s:a",
        "language=eng",
        out.to_str().unwrap(),
    ]);
    ffmpeg(&args);
    out
}

/// What `rich_mkv` holds besides its video is in `output` as in `input`: the stream table
/// (subtitles and font included), the chapters and title, and every audio, subtitle and
/// attachment packet, copied untouched.
pub fn assert_rich_mkv_streams_kept(input: &Path, output: &Path) {
    assert_eq!(streams(output), streams(input));
    assert!(streams(output).contains("subrip") && streams(output).contains("ttf"));
    assert_eq!(chapters(output), chapters(input));
    assert!(chapters(output).contains("Opening") && chapters(output).contains("RAVE test clip"));
    for select in ["a", "s", "t"] {
        assert_eq!(
            packets(output, select),
            packets(input, select),
            "stream {select} copied untouched"
        );
    }
}

/// A 3-frame 48x32 H.264 MP4 (`make_clip`) whose video is rotated by a quarter turn.
pub fn rotated_clip(dir: &Path) -> PathBuf {
    let plain = make_clip(dir, "plain.mp4", "48x32", 3);
    let input = dir.join("rotated.mp4");
    ffmpeg(&[
        "-i",
        plain.to_str().unwrap(),
        "-c",
        "copy",
        "-metadata:s:v",
        "rotate=90",
        input.to_str().unwrap(),
    ]);
    input
}

/// `parts` joined one after the other into `out` by ffmpeg's concat demuxer, streams copied
/// (the list it reads is `list.txt` beside `out`).
pub fn concat_copy(parts: &[&Path], out: &Path) {
    let list = out.with_file_name("list.txt");
    let text: String = parts
        .iter()
        .map(|p| format!("file '{}'\n", p.display()))
        .collect();
    std::fs::write(&list, text).unwrap();
    ffmpeg(&[
        "-f",
        "concat",
        "-safe",
        "0",
        "-i",
        list.to_str().unwrap(),
        "-c",
        "copy",
        out.to_str().unwrap(),
    ]);
}

/// `parts` joined byte for byte into `out` (as `cat a.ts b.ts > out.ts`).
pub fn cat_files(parts: &[&Path], out: &Path) {
    let bytes: Vec<u8> = parts
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    std::fs::write(out, bytes).unwrap();
}

/// An MPEG-TS of `video` (a lavfi source) with a sine for `seconds`, H.264 with two B-frames
/// and a keyframe every 12 frames, AAC audio, its timestamps moved by `offset` seconds
/// (`-output_ts_offset`: an hour in, or just before the 33-bit clock wraps).
pub fn offset_ts_clip(path: &Path, video: &str, seconds: u32, offset: &str) {
    let sine = format!("sine=duration={seconds}");
    lavfi_clip(
        path,
        &[video, &sine],
        &[
            "-c:v",
            "libx264",
            "-bf",
            "2",
            "-g",
            "12",
            "-c:a",
            "aac",
            "-output_ts_offset",
            offset,
        ],
    );
}

/// An FFmpeg metadata file at `path` with `chapters` (start and end in milliseconds, title),
/// for `-i path -map_chapters N`.
pub fn write_chapters(path: &Path, chapters: &[(u64, u64, &str)]) {
    let mut text = String::from(";FFMETADATA1\n");
    for (start, end, title) in chapters {
        text += &format!("[CHAPTER]\nTIMEBASE=1/1000\nSTART={start}\nEND={end}\ntitle={title}\n");
    }
    std::fs::write(path, text).unwrap();
}
