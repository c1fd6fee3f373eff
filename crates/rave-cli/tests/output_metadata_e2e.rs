//! End-to-end output description: RGB sources tagged with the matrix they were converted
//! with and shown in their colours, HDR10 metadata kept (container and bitstream), what a
//! container cannot keep warned about once, refusals that name the containers that can hold
//! a stream, and write errors that name the user's output path.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn nearest(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    upscale(input, output, &fixture("nearest_x2.onnx"), extra)
}

/// Per-channel means of packed RGB24 bytes.
fn means(rgb: &[u8]) -> [f64; 3] {
    let mut sum = [0f64; 3];
    for px in rgb.chunks_exact(3) {
        for c in 0..3 {
            sum[c] += f64::from(px[c]);
        }
    }
    sum.map(|s| s / (rgb.len() / 3) as f64)
}

/// The source scaled x2 (nearest neighbour, as the fixture model does) by the ffmpeg CLI,
/// as RGB24.
fn source_x2_rgb(input: &Path) -> Vec<u8> {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(input)
        .args([
            "-vf",
            "scale=iw*2:ih*2:flags=neighbor",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

#[test]
fn rgb_sources_are_tagged_with_the_matrix_used_and_keep_their_colours() {
    let dir = scratch();
    let gradient =
        "gradients=s=64x48:c0=0xff2000:c1=0x2040ff:x0=0:y0=0:x1=63:y1=47:rate=25:duration=0.12";
    // Flat blocks, drawn in RGB, of colours that ffmpeg's RGB -> pal8 (a 3-3-2 palette)
    // holds exactly (a gradient would be dithered into it, noise that 4:2:0 cannot hold). swscale turns a palette into YUV with BT.601 whatever it is told, so
    // before the fix a pal8 source came out tagged BT.601 full range, or (told BT.709)
    // with its red as (252, 20, 0).
    let blocks = "color=c=0xfcfcff:s=64x48:r=25:d=0.12,format=rgb24,drawbox=x=0:y=0:w=32:h=48:color=0xfc0000:t=fill,drawbox=x=0:y=24:w=64:h=24:color=0x2448ff:t=fill";
    let sources = [
        ("png", "rgb24", gradient),
        ("ffv1", "bgra", gradient),
        ("png", "rgb48be", gradient),
        ("png", "pal8", blocks),
    ];
    for (codec, pix_fmt, source) in sources {
        let input = dir.path().join(format!("{pix_fmt}.mkv"));
        lavfi_clip(&input, &[source], &["-pix_fmt", pix_fmt, "-c:v", codec]);
        assert_eq!(video_field(&input, "pix_fmt"), pix_fmt);
        let output = dir.path().join(format!("{pix_fmt}-out.mkv"));
        assert_exit(&nearest(&input, &output, &["--crf", "0"]), 0);
        assert_eq!(video_field(&output, "color_space"), "bt709", "{pix_fmt}");
        assert_eq!(video_field(&output, "color_range"), "tv", "{pix_fmt}");
        let want = source_x2_rgb(&input);
        let got = decode_rgb(&output);
        assert_eq!(got.len(), want.len());
        let p = psnr(&got, &want);
        let (a, b) = (means(&got), means(&want));
        println!("{pix_fmt}: PSNR {p:.2} dB, means {a:?} vs {b:?}");
        // Before the fix: 31 dB, and the green mean 7.6 levels off. What remains (1-2.6
        // levels, mostly darker) is swscale's own RGB -> YUV rounding: ffmpeg converting the
        // same source shows the same offsets.
        // The blocks' hard red/blue edges lose their chroma to 4:2:0 (28 dB, whatever the
        // matrix): for them the means tell a wrong matrix (5 levels of green).
        let least = if source == blocks { 25.0 } else { 40.0 };
        assert!(p > least, "{pix_fmt}: PSNR {p:.2} dB");
        for c in 0..3 {
            assert!(
                (a[c] - b[c]).abs() < 3.0,
                "{pix_fmt}: channel {c} mean {} vs {}",
                a[c],
                b[c]
            );
        }
    }
}

#[test]
fn hdr10_metadata_is_kept_in_the_container_and_the_hevc_and_av1_bitstreams() {
    let dir = scratch();
    let input = fixture("hdr10_64x48.mkv");
    let fields = HDR10_FIELDS;
    let want = hdr_side_data(&input, &format!("stream_side_data={fields}"));
    assert_eq!(want.len(), 12, "fixture carries HDR10: {want:?}");
    for (name, codec, preset) in [
        ("hevc.mkv", "hevc", "ultrafast"),
        ("hevc.mp4", "hevc", "ultrafast"),
        ("h264.mov", "h264", "ultrafast"),
        ("av1.mkv", "av1", "12"),
    ] {
        let output = dir.path().join(name);
        let o = nearest(&input, &output, &["--codec", codec, "--preset", preset]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("WARN"), "{name}: {}", stderr(&o));
        let got = hdr_side_data(&output, &format!("stream_side_data={fields}"));
        assert_same_hdr(&got, &want, &format!("{name}: container"));
        if codec != "h264" {
            let frame = hdr_side_data(&output, &format!("frame_side_data={fields}"));
            assert_same_hdr(&frame, &want, &format!("{name}: bitstream"));
        }
    }
}

fn warnings(o: &std::process::Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("JSON report");
    v["mux"]["warnings"]
        .as_array()
        .expect("mux.warnings")
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn rotation_is_kept_in_quicktime_and_warned_about_once_in_matroska() {
    let dir = scratch();
    let input = rotated_clip(dir.path());
    let rotated = rotation(&input);
    assert!(!rotated.is_empty(), "fixture is rotated");
    let mov = dir.path().join("out.mov");
    let o = nearest(&input, &mov, &["--json"]);
    assert_exit(&o, 0);
    assert_eq!(rotation(&mov), rotated);
    assert_eq!(warnings(&o), Vec::<String>::new());

    let mkv = dir.path().join("out.mkv");
    let o = nearest(&input, &mkv, &["--json"]);
    assert_exit(&o, 0);
    let said = warnings(&o);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("rotation ")
            && said[0].ends_with(
                "90° cannot be stored in Matroska by this FFmpeg; write .mp4 or .mov to keep it"
            ),
        "{said:?}"
    );
    let err = stderr(&o);
    assert_eq!(err, format!("rave: warning: {}\n", said[0]), "warned once");

    // For machines, the warning is one more JSON line among the progress events.
    let o = nearest(&input, &mkv, &["--progress", "jsonl", "--overwrite"]);
    assert_exit(&o, 0);
    let events = jsonl_events(&o);
    let warned: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "warning").collect();
    assert_eq!(warned.len(), 1, "{events:?}");
    assert_eq!(warned[0]["message"], said[0].as_str());
}

/// The display matrix's translation of `path`'s video (tx, ty in 16.16), as ffprobe dumps
/// it (its third row).
fn translation(path: &Path) -> (i64, i64) {
    let text = ffprobe(path, &["-select_streams", "v:0", "-show_streams"]);
    let row = text
        .lines()
        .find(|l| l.starts_with("00000002:"))
        .unwrap_or_else(|| panic!("no display matrix: {text}"));
    let v: Vec<i64> = row[9..]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    (v[0], v[1])
}

/// An iPhone's 90° matrix also moves the rotated picture back into view, by the frame's
/// height, in the input's pixels; Apple's players apply that offset, so the upscaled
/// picture needs it in its own pixels (it was copied as it was: half the picture out of
/// view there).
#[test]
fn a_rotation_offset_is_scaled_with_the_picture() {
    let dir = scratch();
    let rotated = rotated_clip(dir.path());
    // FFmpeg writes no offset: put an iPhone's (the 48x32 frame's height, 32 px) into the
    // tkhd matrix, stored as nine big-endian words.
    let mut bytes = std::fs::read(&rotated).unwrap();
    let words = |m: [i32; 9]| -> Vec<u8> { m.iter().flat_map(|v| v.to_be_bytes()).collect() };
    let plain = words([0, -65536, 0, 65536, 0, 0, 0, 0, 1 << 30]);
    let at = bytes
        .windows(plain.len())
        .position(|w| w == plain.as_slice())
        .expect("the tkhd matrix of a 90° rotation");
    let offset = words([0, -65536, 0, 65536, 0, 0, 32 << 16, 0, 1 << 30]);
    bytes[at..at + offset.len()].copy_from_slice(&offset);
    let input = dir.path().join("iphone.mov");
    std::fs::write(&input, bytes).unwrap();
    assert_eq!(translation(&input), (32 << 16, 0));
    for name in ["out.mov", "out.mp4"] {
        let output = dir.path().join(name);
        assert_exit(&nearest(&input, &output, &[]), 0);
        assert_eq!(translation(&output), (64 << 16, 0), "{name}");
    }
}

#[test]
fn interlaced_input_is_warned_about_once_and_progressive_input_is_not() {
    let dir = scratch();
    let input = dir.path().join("interlaced.mp4");
    lavfi_clip(
        &input,
        &["testsrc2=size=48x32:rate=25:duration=0.2"],
        &[
            "-flags",
            "+ildct+ilme",
            "-c:v",
            "libx264",
            "-x264-params",
            "tff=1",
            "-pix_fmt",
            "yuv420p",
        ],
    );
    assert_eq!(video_field(&input, "field_order"), "tt");
    let output = dir.path().join("out.mp4");
    let o = nearest(&input, &output, &["--json"]);
    assert_exit(&o, 0);
    let said = warnings(&o);
    let expect = "the input is interlaced (top field first); RAVE upscales whole frames and writes progressive video; deinterlace first for best results (e.g. ffmpeg -vf bwdif)";
    assert_eq!(said, vec![expect.to_string()]);
    assert_eq!(stderr(&o), format!("rave: warning: {expect}\n"));

    let plain = make_clip(dir.path(), "plain.mp4", "48x32", 3);
    let o = nearest(&plain, &dir.path().join("plain-out.mp4"), &["--json"]);
    assert_exit(&o, 0);
    assert_eq!(warnings(&o), Vec::<String>::new());
    assert_eq!(stderr(&o), "");
}

/// An MP4 clip with a mov_text subtitle stream (which Matroska cannot hold here).
fn mov_text_clip(dir: &Path) -> PathBuf {
    let subs = dir.join("s.srt");
    std::fs::write(&subs, "1\n00:00:00,000 --> 00:00:00,100\nHi\n").unwrap();
    let s = subs.to_str().unwrap();
    clip_with(
        dir,
        "movtext.mp4",
        &[
            "-i", s, "-map", "0", "-map", "1", "-c", "copy", "-c:s", "mov_text",
        ],
    )
}

/// A clip with one extra stream added by `extra_args` (inputs and codec options).
fn clip_with(dir: &Path, name: &str, extra_args: &[&str]) -> PathBuf {
    let base = make_clip(dir, &format!("base-{name}.mp4"), "48x32", 3);
    let out = dir.join(name);
    let mut args = vec!["-i", base.to_str().unwrap()];
    args.extend_from_slice(extra_args);
    args.push(out.to_str().unwrap());
    ffmpeg(&args);
    out
}

/// A clip with cover art `picture` (an image file) as stream #2.
fn with_cover_art(dir: &Path, name: &str, picture: &Path) -> PathBuf {
    let base = make_clip(dir, &format!("base-{name}.mp4"), "48x32", 3);
    let out = dir.join(name);
    mux_copy(
        &base,
        picture,
        "1",
        &["-disposition:v:1", "attached_pic"],
        &out,
    );
    out
}

/// The picture bytes of cover-art stream `index` of `path`, its file name tag, and whether
/// FFmpeg reads it as cover art.
fn cover_of(path: &Path, index: usize) -> (Vec<u8>, String, bool) {
    let o = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args([
            "-map",
            &format!("0:{index}"),
            "-c",
            "copy",
            "-frames:v",
            "1",
        ])
        .args(["-f", "image2pipe", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let probe = |entries: &str| {
        ffprobe(
            path,
            &[
                "-select_streams",
                &index.to_string(),
                "-show_entries",
                entries,
                "-of",
                "csv=p=0",
            ],
        )
        .trim()
        .to_string()
    };
    (
        o.stdout,
        probe("stream_tags=filename"),
        probe("stream_disposition=attached_pic") == "1",
    )
}

/// FFmpeg 5.1 writes no cover art into Matroska (a JPEG became a one-frame video track, a
/// PNG was refused, so an anime MKV with fonts, ASS and a PNG cover could go nowhere): it
/// goes in as the attachment `cover.jpg` / `cover.png` that Matroska players (and FFmpeg)
/// read as cover art, byte for byte, and comes back the same through a second pass; in MP4
/// it stays cover art. Nothing to warn about in either.
#[test]
fn cover_art_goes_into_matroska_as_an_attachment_read_back_as_cover_art() {
    let dir = scratch();
    for extension in ["jpg", "png"] {
        let picture = dir.path().join(format!("picture.{extension}"));
        lavfi_clip(&picture, &["testsrc2=size=32x32"], &["-frames:v", "1"]);
        let bytes = std::fs::read(&picture).unwrap();
        let input = with_cover_art(dir.path(), &format!("{extension}-cover.mp4"), &picture);
        let mkv = dir.path().join(format!("{extension}-out.mkv"));
        let o = nearest(&input, &mkv, &[]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("WARN"), "{}", stderr(&o));
        let want = (bytes.clone(), format!("cover.{extension}"), true);
        assert_eq!(cover_of(&mkv, 2), want, "{extension}");
        let again = dir.path().join(format!("{extension}-again.mkv"));
        assert_exit(&nearest(&mkv, &again, &[]), 0);
        assert_eq!(cover_of(&again, 2), want, "{extension}: second pass");
        let mp4 = dir.path().join(format!("{extension}-out.mp4"));
        let o = nearest(&mkv, &mp4, &[]);
        assert_exit(&o, 0);
        assert!(!stderr(&o).contains("WARN"), "{}", stderr(&o));
        assert_eq!(cover_of(&mp4, 2).0, bytes, "{extension}: back into MP4");
    }
    // MP4's cover box also holds BMP: kept from MP4 to MP4 (it was refused: "write to .mkv").
    let bmp = dir.path().join("picture.bmp");
    lavfi_clip(&bmp, &["testsrc2=size=32x32"], &["-frames:v", "1"]);
    let input = with_cover_art(dir.path(), "bmp-cover.mp4", &bmp);
    let mp4 = dir.path().join("bmp-out.mp4");
    assert_exit(&nearest(&input, &mp4, &[]), 0);
    assert_eq!(cover_of(&mp4, 2).0, std::fs::read(&bmp).unwrap());
}

#[test]
fn refusals_name_the_containers_that_can_hold_the_stream() {
    let dir = scratch();
    let cover = dir.path().join("cover.png");
    lavfi_clip(&cover, &["testsrc2=size=32x32"], &["-frames:v", "1"]);
    let mov_text = mov_text_clip(dir.path());
    let cover_art = with_cover_art(dir.path(), "cover.mp4", &cover);
    // MP4 text subtitles and cover art: QuickTime holds the one, Matroska the other, only
    // MP4 both (once, .mov was advised for the subtitles, then refused the cover).
    let both = with_cover_art(dir.path(), "both.mp4", &cover);
    let both = {
        let out = dir.path().join("both-movtext.mp4");
        mux_copy(
            &both,
            &mov_text,
            "1:s",
            &["-disposition:v:1", "attached_pic"],
            &out,
        );
        out
    };
    let s302m = clip_with(
        dir.path(),
        "s302m.ts",
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=sample_rate=48000:duration=0.12",
            "-map",
            "0:v",
            "-map",
            "1",
            "-c:v",
            "copy",
            "-ac",
            "2",
            "-c:a",
            "s302m",
            "-strict",
            "-2",
        ],
    );
    for (input, out, expect) in [
        (
            &mov_text,
            "out.mkv",
            "stream #2 (subtitle mov_text) cannot be stored in Matroska by this FFmpeg; write to .mp4 or .mov instead",
        ),
        (
            &both,
            "out.mkv",
            "stream #2 (subtitle mov_text) cannot be stored in Matroska by this FFmpeg; write to .mp4 instead",
        ),
        (
            &cover_art,
            "out.mov",
            "stream #2 (cover art, png) cannot be stored in QuickTime (.mov) by this FFmpeg; write to .mp4 or .mkv instead",
        ),
        (
            &s302m,
            "out.mkv",
            "stream #1 (audio s302m) cannot be stored in Matroska by this FFmpeg; no container RAVE writes (.mp4, .mov, .mkv) can hold it: drop that stream first (ffmpeg -i INPUT -map 0 -map -0:1 -c copy OUTPUT), or convert it (-c:a aac)",
        ),
    ] {
        let output = dir.path().join(out);
        let o = nearest(input, &output, &[]);
        assert_exit(&o, 4);
        assert_eq!(
            stderr(&o).trim(),
            format!("rave: error: {}: {expect}", output.display()),
            "{}",
            input.display()
        );
        assert!(!output.exists());
    }
    // Where it fits, it is kept: cover art in MP4, text subtitles in MP4.
    let mp4 = dir.path().join("cover-out.mp4");
    let o = nearest(&cover_art, &mp4, &[]);
    assert_exit(&o, 0);
    assert!(
        !stderr(&o).contains("not upscaled"),
        "cover art: {}",
        stderr(&o)
    );
    assert!(
        ffprobe(
            &mp4,
            &[
                "-show_entries",
                "stream_disposition=attached_pic",
                "-of",
                "csv=p=0"
            ]
        )
        .contains('1')
    );
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

/// The first write to fail is the segment's, in the work folder: named by its final name
/// there (with what to do where the disk is full), never by a temporary file's.
#[test]
fn a_write_error_names_the_work_folders_segment_not_a_temporary_file() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "64x48", 50);
    let output = dir.path().join("out.mp4");
    // A 16 KiB file-size limit makes the muxer fail part-way through a lossless output
    // (RAVE ignores SIGXFSZ, so the write fails with EFBIG instead of killing it).
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -f 16; exec \"$0\" upscale -i {} -o {} -m {} --crf 0 --preset ultrafast",
            input.display(),
            output.display(),
            fixture("nearest_x2.onnx").display()
        ))
        .arg(env!("CARGO_BIN_EXE_rave"))
        .env_remove("RAVE_LOG")
        .output()
        .unwrap();
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: writing failed",
            dir.path()
                .join(".out.mp4.rave-work/seg-00000.mp4")
                .display()
        )),
        "{err}"
    );
    assert!(!err.contains(".tmp"), "{err}");
    assert!(!output.exists());
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}

#[test]
fn an_output_folder_that_refuses_new_files_is_named_not_the_temporary_file() {
    let dir = scratch();
    let input = make_clip(dir.path(), "in.mp4", "64x48", 3);
    // sysfs refuses new files even to root, unlike a folder without write permission.
    let output = Path::new("/sys/rave-out.mp4");
    let o = nearest(&input, output, &[]);
    assert_exit(&o, 4);
    let err = stderr(&o);
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "rave: error: /sys/rave-out.mp4: cannot write output: cannot create a file in /sys: Permission denied (os error 13)"
        ],
    );
}

#[test]
fn benchmark_takes_an_mp4_whose_subtitles_matroska_cannot_hold() {
    let dir = scratch();
    let input = mov_text_clip(dir.path());
    let model = fixture("nearest_x2.onnx");
    let o = run(&[
        "benchmark",
        "-i",
        input.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--device",
        "cpu",
        "--frames",
        "2",
        "--progress",
        "off",
    ]);
    assert_exit(&o, 0);
}
