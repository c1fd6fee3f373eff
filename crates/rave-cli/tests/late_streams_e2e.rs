//! MPEG-TS streams that do not start together: a second audio track whose first packet
//! comes after FFmpeg's default probe is copied whole (it used to be dropped as "holding no
//! data"), and video written more than a second after the audio it plays with (an encoder's
//! lookahead) keeps its timestamps (its first packet was read as a restart of the clock,
//! moving the video 1.56 s against the audio).

mod common;

use std::path::Path;

use common::*;

/// Every packet time of stream `select`, sorted, in seconds (ffprobe reading as far as
/// RAVE does for a late stream: by default it misses its first packets).
fn times(path: &Path, select: &str) -> Vec<f64> {
    sorted_packet_times(
        path,
        select,
        &["-analyzeduration", "120M", "-probesize", "256M"],
    )
}

/// Whether every packet of `streams` keeps its time from the start of the file, to 1 ms.
fn same_times(input: &Path, output: &Path, streams: &[&str]) {
    let start = |p: &Path| {
        streams
            .iter()
            .map(|s| times(p, s)[0])
            .fold(f64::INFINITY, f64::min)
    };
    let (a0, b0) = (start(input), start(output));
    for s in streams {
        let (a, b) = (times(input, s), times(output, s));
        assert_eq!(a.len(), b.len(), "{s}: every packet");
        for (x, y) in a.iter().zip(&b) {
            assert!(((x - a0) - (y - b0)).abs() < 0.001, "{s}: {x} became {y}");
        }
    }
}

#[test]
fn a_second_audio_track_that_starts_late_is_copied_whole() {
    let dir = scratch();
    let d = dir.path();
    let late = d.join("late.wav");
    lavfi_clip(&late, &["sine=frequency=600:duration=4"], &[]);
    let input = d.join("late.ts");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25:duration=16",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=16",
        "-itsoffset",
        "10",
        "-i",
        late.to_str().unwrap(),
        "-map",
        "0",
        "-map",
        "1",
        "-map",
        "2",
        "-c:v",
        "libx264",
        "-g",
        "50",
        "-c:a",
        "aac",
        input.to_str().unwrap(),
    ]);
    let out = d.join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    assert!(!stdout(&o).contains("skipped stream"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("copied 2 stream(s) untouched"),
        "{}",
        stdout(&o)
    );
    same_times(&input, &out, &["v:0", "a:0", "a:1"]);
}

#[test]
fn video_written_after_its_audio_keeps_its_timestamps() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("paused.ts");
    // Both streams pause 12 s after 1.6 s; the encoder's lookahead has the muxer write
    // 1.6 s of audio before the first video packet.
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=64x48:rate=25:duration=4",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=4:sample_rate=48000",
        "-filter_complex",
        "[0:v]setpts='PTS+12/TB*gte(T,1.6)'[v];[1:a]asetpts='PTS+12/TB*gte(T,1.6)'[a]",
        "-map",
        "[v]",
        "-map",
        "[a]",
        "-fps_mode",
        "passthrough",
        "-c:v",
        "libx264",
        "-threads",
        "1",
        "-c:a",
        "aac",
        input.to_str().unwrap(),
    ]);
    let out = d.join("out.mkv");
    let o = upscale(&input, &out, &fixture("nearest_x2.onnx"), &[]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("restart"), "{}", stderr(&o));
    same_times(&input, &out, &["v:0", "a:0"]);
}
