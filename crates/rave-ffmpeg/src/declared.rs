//! What a container declares about a stream, to hold what reading it finds against:
//! sample counts (MP4/MOV's index, Matroska's frame-count tags) and where it ends, and
//! where the whole file ends.

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;

use crate::sys;

/// What the container declares about one stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// Packets the stream holds.
    pub packets: Option<u64>,
    /// Where the stream's timeline ends, in its time base.
    pub end: Option<i64>,
    /// Frames an AVI header states its video stream holds (the stream header's length).
    /// Muxers miscount it by a frame (FFmpeg's declares 201 for the 200 it writes of
    /// MPEG-4 Part 2), so it is no damage of its own: it counts what a file found damaged
    /// otherwise lost (a cut or a zeroed stretch of the `movi` list, frames numbered on).
    pub header_frames: Option<u64>,
}

/// Frames an AVI header may state beyond a complete stream's (see
/// [`Declared::header_frames`]).
pub(crate) const HEADER_FRAMES_SLACK: u64 = 1;

/// What the container declares about stream `index`. Sample counts are trusted only from
/// MP4/MOV (the demuxer's index after edit lists) and Matroska frame-count tags (an AVI
/// header's, only for a file damaged otherwise); durations only when FFmpeg took them from
/// the headers, or from Matroska duration tags.
pub(crate) fn declared_of(
    input: &Input,
    index: usize,
    format: &str,
    declared_times: bool,
) -> Declared {
    let Some(stream) = input.stream(index) else {
        return Declared::default();
    };
    let is_mov = is_mov(format);
    let packets = if is_mov && stream.frames() > 0 {
        // The index after edit lists; an empty one means the demuxer could not build it.
        match sys::index_entries(input, index) {
            0 => Some(stream.frames() as u64),
            n => Some(n),
        }
    } else {
        stream_tag(&stream, "NUMBER_OF_FRAMES").and_then(|v| v.trim().parse().ok())
    };
    let tb = stream.time_base();
    let units = |seconds: f64| {
        (tb.numerator() > 0).then(|| {
            (seconds * f64::from(tb.denominator()) / f64::from(tb.numerator())).round() as i64
        })
    };
    // A stream's duration reads as the end of its timeline in some files and as the span
    // from its first timestamp in others (MP4: `-ss 0.3 -t 1 -c copy` gives AAC starting at
    // 0.02 s whose duration is where it ends; `-output_ts_offset 1.5`, the span). As for the
    // whole file, the earlier reading is held: it refuses no complete stream.
    let end = if declared_times && stream.duration() > 0 && !is_matroska(format) {
        Some(stream.duration())
    } else {
        duration_tag_s(&stream).and_then(units)
    };
    let avi_video = is_avi(format) && stream.parameters().medium() == Type::Video;
    let header_frames = (avi_video && stream.frames() > 0).then(|| stream.frames() as u64);
    Declared {
        packets,
        end,
        header_frames,
    }
}

/// Whether FFmpeg's format name is AVI's.
pub(crate) fn is_avi(format: &str) -> bool {
    format.split(',').any(|f| f == "avi")
}

/// Where the file's declared length ends, in seconds, when it can be held against the
/// streams RAVE reads: not when an MP4/MOV data track with samples of its own (chapter
/// text, timecode) reaches that end, as a chapter list longer than the media does; the
/// length of such a track says nothing about the picture and sound, whose own declared
/// ends are held to them still. (Only there: FFmpeg gives a stream without timing of its
/// own, a Matroska attachment say, the file's length, which would always reach it.)
pub(crate) fn file_end_s(input: &Input, format: &str, declared_times: bool) -> Option<f64> {
    if !declared_times || input.duration() <= 0 {
        return None;
    }
    let end = input.duration() as f64 / 1e6;
    let unread_reaches_end = input.streams().any(|s| {
        let unread = is_mov(format)
            && s.parameters().medium() == Type::Data
            && (s.frames() > 0 || sys::index_entries(input, s.index()) > 0);
        let tb = f64::from(s.time_base());
        let span = s.duration() as f64 * tb;
        let start = if s.start_time() != ffmpeg_next::ffi::AV_NOPTS_VALUE {
            s.start_time() as f64 * tb
        } else {
            0.0
        };
        unread && s.duration() > 0 && (span.max(start + span) >= end - UNREAD_END_TOLERANCE_S)
    });
    (!unread_reaches_end).then_some(end)
}

/// How near the file's end an unread stream's end must be to be taken as what set it.
const UNREAD_END_TOLERANCE_S: f64 = 0.01;

fn is_mov(format: &str) -> bool {
    format.split(',').any(|f| f == "mov" || f == "mp4")
}

/// Whether FFmpeg's format name is Matroska's (or WebM's).
pub(crate) fn is_matroska(format: &str) -> bool {
    format.split(',').any(|f| f == "matroska" || f == "webm")
}

/// Where a Matroska stream ends by its own DURATION tag (`DURATION` or `DURATION-lang`),
/// in seconds of its timeline.
pub(crate) fn duration_tag_s(stream: &ffmpeg_next::Stream) -> Option<f64> {
    stream_tag(stream, "DURATION").and_then(|v| parse_clock(&v))
}

/// The value of a Matroska stream's tag `name`, under its own name or with a language
/// (`NAME-eng`), in any case.
fn stream_tag(stream: &ffmpeg_next::Stream, name: &str) -> Option<String> {
    stream
        .metadata()
        .iter()
        .find(|(k, _)| {
            k.eq_ignore_ascii_case(name) || k.to_ascii_uppercase().starts_with(&format!("{name}-"))
        })
        .map(|(_, v)| v.to_owned())
}

/// Seconds of a Matroska duration tag: "HH:MM:SS.nnnnnnnnn".
fn parse_clock(text: &str) -> Option<f64> {
    let mut parts = text.trim().split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (h, m, s): (f64, f64, f64) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
    (h >= 0.0 && m >= 0.0 && s >= 0.0).then_some(h * 3600.0 + m * 60.0 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matroska_clock_tags_parse() {
        assert_eq!(parse_clock("00:00:01.221000000"), Some(1.221));
        assert_eq!(parse_clock("01:02:03.5"), Some(3723.5));
        assert_eq!(parse_clock("garbage"), None);
        assert_eq!(parse_clock("1:2"), None);
    }
}
