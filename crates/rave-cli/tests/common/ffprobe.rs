//! Reading files back with ffprobe: stream fields, frame and packet listings, stream and
//! chapter tables.

use std::path::Path;
use std::process::Command;

use super::{stderr, stdout};

/// Run ffprobe and return its stdout.
pub fn ffprobe(path: &Path, args: &[&str]) -> String {
    let o = Command::new("ffprobe")
        .args(["-v", "error"])
        .args(args)
        .arg(path)
        .output()
        .expect("ffprobe installed");
    assert!(o.status.success(), "ffprobe {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// One ffprobe entry of the first video stream, e.g. "width".
pub fn video_field(path: &Path, field: &str) -> String {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            &format!("stream={field}"),
            "-of",
            "csv=p=0",
        ],
    )
    .trim()
    .to_string()
}

/// Presentation times of every decoded video frame.
pub fn frame_times(path: &Path) -> Vec<String> {
    frame_entries(path, "pts_time")
}

/// One ffprobe entry of every decoded video frame, in presentation order (`pts`,
/// `pts_time`); side-data sections of keyframes left out.
pub fn frame_entries(path: &Path, entry: &str) -> Vec<String> {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            &format!("frame={entry}"),
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .map(|l| l.trim_end_matches(',').to_string())
    .filter(|l| !l.is_empty())
    .collect()
}

/// (pts, dts, duration, sha256 of the payload) of every packet of the selected streams.
pub fn packets(path: &Path, select: &str) -> Vec<String> {
    ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            "packet=pts_time,dts_time,duration_time,data_hash",
            "-show_data_hash",
            "SHA256",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// Packets of the selected stream, however damaged (ffprobe may not read their timestamps).
pub fn packet_count(path: &Path, select: &str) -> usize {
    ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            "packet=size",
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .filter(|l| !l.trim_matches(',').is_empty())
    .count()
}

/// Each stream's type, codec, language and attachment tags.
pub fn streams(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-show_entries",
            "stream=codec_type,codec_name:stream_tags=language,filename,mimetype",
            "-of",
            "compact",
        ],
    )
}

/// The chapters with their titles, and the file's title.
pub fn chapters(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-show_entries",
            "chapter=start_time,end_time:chapter_tags=title:format_tags=title",
            "-of",
            "compact",
        ],
    )
}

/// Where each chapter ends, as ffprobe prints it ("1.000000").
pub fn chapter_ends(path: &Path) -> Vec<String> {
    ffprobe(
        path,
        &["-show_entries", "chapter=end_time", "-of", "csv=p=0"],
    )
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

/// The rotation side data of the first video stream ("" when there is none).
pub fn rotation(path: &Path) -> String {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream_side_data=rotation",
            "-of",
            "csv=p=0",
        ],
    )
    .trim()
    .to_string()
}

/// The file's length in seconds, as its container declares it (`format=duration`).
pub fn format_duration(path: &Path) -> f64 {
    ffprobe(
        path,
        &["-show_entries", "format=duration", "-of", "csv=p=0"],
    )
    .trim()
    .parse()
    .unwrap_or_else(|e| panic!("{}: no duration: {e}", path.display()))
}

/// Frames of the first video stream, counted by decoding (an MPEG-TS lists the stream under
/// its program too: the first count is taken; an MPEG-PS's ends in a comma).
pub fn counted_frames(path: &Path) -> u64 {
    ffprobe(
        path,
        &[
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "csv=p=0",
        ],
    )
    .split(|c: char| c.is_whitespace() || c == ',')
    .find(|n| !n.is_empty())
    .and_then(|n| n.parse().ok())
    .expect("a frame count")
}

/// Presentation times (seconds) of the packets of `select` ("v", "a:1"), sorted; `probe`
/// adds ffprobe options (how far it reads for a stream's parameters, say).
pub fn sorted_packet_times(path: &Path, select: &str, probe: &[&str]) -> Vec<f64> {
    let mut args = probe.to_vec();
    args.extend([
        "-select_streams",
        select,
        "-show_entries",
        "packet=pts_time",
        "-of",
        "csv=p=0",
    ]);
    let mut t: Vec<f64> = ffprobe(path, &args)
        .split_whitespace()
        .filter_map(|x| x.trim_end_matches(',').parse().ok())
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

/// That `got` holds the audio packets of `want` (stream `a:0`): the same payloads and
/// lengths in the same order, each within a millisecond of its time there (a repaired
/// timestamp is a middle of two rounded readings).
pub fn assert_same_audio(got: &Path, want: &Path, what: &str) {
    let (got, want) = (packets(got, "a:0"), packets(want, "a:0"));
    assert_eq!(got.len(), want.len(), "{what}: audio packets");
    for (g, w) in got.iter().zip(&want) {
        let split = |row: &str| {
            let f: Vec<String> = row.split(',').map(str::to_string).collect();
            let t = f[0].parse::<f64>().unwrap_or(f64::NAN);
            (t, f[2..].to_vec())
        };
        let ((gt, grest), (wt, wrest)) = (split(g), split(w));
        assert!(
            grest == wrest && (gt - wt).abs() <= 0.0011,
            "{what}: audio packet {g} where {w}"
        );
    }
}

/// That in `out`, the join of `first` (of `frames` frames) and `second`, the second part's
/// sound starts as far from its picture as in `second` itself, within `tolerance` seconds.
pub fn assert_second_part_in_sync(
    out: &Path,
    (first, frames): (&Path, usize),
    second: &Path,
    (tolerance, what): (f64, &str),
) {
    let lag = |path: &Path, video_from: usize, audio_from: usize| {
        sorted_packet_times(path, "a:0", &[])[audio_from]
            - sorted_packet_times(path, "v:0", &[])[video_from]
    };
    let want = lag(second, 0, 0);
    let got = lag(out, frames, packet_count(first, "a:0"));
    assert!(
        (got - want).abs() < tolerance,
        "{what}: {got} s, in the part {want} s"
    );
}
