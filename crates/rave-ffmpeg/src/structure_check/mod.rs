//! Up-front checks of a container's own structure against the file, before any frame is
//! decoded: MP4/MOV top-level boxes must chain to the end of the file; a Matroska segment
//! must fit in the file, its top-level elements must chain, and each one's CRC-32 (which
//! FFmpeg writes and does not verify) must match; an MPEG-TS file must end on a whole
//! transport packet; AVI RIFF chunks, and the chunks of its `movi` list, must chain to the
//! end of the file; FLV tags must chain to the end of the file, each followed by its own
//! size; a Y4M file must hold whole frames. FFmpeg reads such files without complaint and
//! skips or stops early.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

mod flv;
mod fragments;
mod isobmff;
mod matroska;
mod mp4_box;
mod riff;
mod sample_tables;
mod transport;
mod y4m;

pub use flv::check_flv;
pub use isobmff::check_boxes;
pub use matroska::check_matroska;
pub use riff::check_riff;
pub use transport::check_transport_stream;
pub use y4m::check_y4m;

/// Something wrong with the file's structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureProblem {
    /// The file ends before its structure says it does.
    pub truncated: bool,
    /// What is wrong (the first problem), in words.
    pub text: String,
    /// How many problems were found (damaged elements).
    pub count: u64,
    /// What an index the damage cut off from the rest says of each track past the break:
    /// (track ID, the latest time it lists there in the track's time scale, how many of
    /// its fragments lie there). A fragmented MP4's `mfra` lists fragments past a break in
    /// its boxes that no reader reaches.
    pub indexed_ends: Vec<(u32, u64, u64)>,
}

impl StructureProblem {
    fn truncated(text: String) -> Self {
        Self {
            truncated: true,
            text,
            count: 1,
            indexed_ends: Vec::new(),
        }
    }

    fn broken(text: String) -> Self {
        Self {
            truncated: false,
            text,
            count: 1,
            indexed_ends: Vec::new(),
        }
    }
}

/// Check `path`, demuxed by FFmpeg's `format` (its short name, e.g. "matroska,webm").
/// I/O errors are not reported here: the demuxer will meet and report them itself.
pub fn check(path: &Path, format: &str) -> Option<StructureProblem> {
    if let Some(problem) = container_header_lost(path, format) {
        return Some(problem);
    }
    if !is_checked(format) {
        return None;
    }
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let names: Vec<&str> = format.split(',').collect();
    if names.contains(&"mov") || names.contains(&"mp4") {
        check_boxes(&mut file, len)
    } else if names.contains(&"matroska") || names.contains(&"webm") {
        check_matroska(&mut file, len)
    } else if names.contains(&"mpegts") {
        check_transport_stream(&mut file, len)
    } else if names.contains(&"avi") {
        check_riff(&mut file, len)
    } else if names.contains(&"flv") {
        check_flv(&mut file, len)
    } else if names.contains(&"yuv4mpegpipe") {
        check_y4m(&mut file, len)
    } else {
        None
    }
}

/// A file named as a container (`.avi`, `.mp4`, `.mkv`...) that FFmpeg reads as a raw video
/// stream has lost its container header (zeroed or overwritten): FFmpeg's probe then finds
/// only the pictures, and the audio and other streams the container held are gone unseen.
fn container_header_lost(path: &Path, format: &str) -> Option<StructureProblem> {
    const RAW_VIDEO: [&str; 10] = [
        "h264",
        "hevc",
        "m4v",
        "mpegvideo",
        "mjpeg",
        "vc1",
        "obu",
        "h263",
        "cavsvideo",
        "dirac",
    ];
    // Container extensions only: `.m4v` is also the raw MPEG-4 stream's own extension.
    const CONTAINERS: [&str; 12] = [
        "avi", "mp4", "mov", "mkv", "webm", "ts", "m2ts", "mts", "flv", "wmv", "asf", "3gp",
    ];
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if !CONTAINERS.contains(&ext.as_str()) || !RAW_VIDEO.contains(&format) {
        return None;
    }
    Some(StructureProblem::broken(format!(
        "the file is named .{ext} but holds no readable .{ext} header (FFmpeg reads it as a raw {format} video stream): its container header is damaged (or it is a raw stream misnamed .{ext}), and any audio or subtitles in it cannot be read"
    )))
}

/// Whether FFmpeg's demuxer `format` is one whose structure RAVE checks (MP4/MOV, Matroska/
/// WebM, MPEG-TS, AVI, FLV, Y4M). In others (MPEG-PS, Ogg, raw streams...) damage is seen
/// only where the demuxer or the decoder reports it.
pub fn is_checked(format: &str) -> bool {
    const CHECKED: [&str; 8] = [
        "mov",
        "mp4",
        "matroska",
        "webm",
        "mpegts",
        "avi",
        "flv",
        "yuv4mpegpipe",
    ];
    format.split(',').any(|f| CHECKED.contains(&f))
}

/// Read until `buf` is full or the input ends; the bytes read.
pub(crate) fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> Option<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(got)
}

/// Whether every byte from `pos` to `len` is zero (up to 1 MiB is checked).
fn zeros_to_end(r: &mut (impl Read + Seek), pos: u64, len: u64) -> Option<bool> {
    padding_to_end(r, pos, len, |b| b == 0)
}

/// Whether every byte from `pos` to `len` is `padding` (a longer rest than 1 MiB is not).
fn padding_to_end(
    r: &mut (impl Read + Seek),
    pos: u64,
    len: u64,
    padding: impl Fn(u8) -> bool,
) -> Option<bool> {
    if len - pos > 1 << 20 {
        return Some(false);
    }
    r.seek(SeekFrom::Start(pos)).ok()?;
    let mut rest = vec![0u8; (len - pos) as usize];
    let got = read_up_to(r, &mut rest)?;
    Some(rest[..got].iter().all(|&b| padding(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_read_as_a_raw_stream_has_lost_its_header() {
        let p = check(Path::new("/x/clip.AVI"), "m4v").expect("header lost");
        assert!(!p.truncated, "{p:?}");
        assert!(
            p.text.starts_with("the file is named .avi but holds no readable .avi header (FFmpeg reads it as a raw m4v video stream)"),
            "{}",
            p.text
        );
        assert!(check(Path::new("/x/clip.mkv"), "h264").is_some());
        assert_eq!(
            check(Path::new("/x/clip.m4v"), "m4v"),
            None,
            "raw MPEG-4's own name"
        );
        assert_eq!(check(Path::new("/x/clip.h264"), "h264"), None);
        assert_eq!(check(Path::new("/x/clip"), "hevc"), None);
    }

    #[test]
    fn the_checked_formats_are_known_by_ffmpegs_names() {
        assert!(is_checked("mov,mp4,m4a,3gp,3g2,mj2"));
        assert!(is_checked("matroska,webm"));
        assert!(is_checked("mpegts"));
        assert!(!is_checked("mpeg"));
        assert!(!is_checked("ogg"));
        assert!(!is_checked("h264"));
    }
}
