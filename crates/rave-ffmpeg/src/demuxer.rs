//! `Demuxer`: one input file's container, read packet by packet on one continuous timeline
//! (timestamp restarts of transport streams spliced), seekable to a video keyframe.

use std::path::{Path, PathBuf};

use ffmpeg_next::format::context::Input;
use ffmpeg_next::{Packet, Rational};
use rave_core::error::{EngineError, Result};

use crate::splice::TimestampSplicer;
use crate::{input, sys};

/// Consecutive demux errors after which the rest of the file is treated as unreadable.
const MAX_CONSECUTIVE_READ_ERRORS: u32 = 64;

/// How much earlier than a keyframe's presentation time a seek in MPEG-TS/PS aims, in
/// seconds: more than any decode-to-presentation delay of its frames.
pub const UNINDEXED_SEEK_MARGIN_S: f64 = 2.0;

/// The errors FFmpeg logged while opening an input.
#[derive(Debug, Default)]
pub struct OpenErrors {
    /// By the demuxer (and, outside MPEG-TS/PS, the other streams' probing decoders).
    pub demuxer: Vec<String>,
    /// By the video decoder probing the first packets.
    pub video_probe: Vec<String>,
}

/// The container of one input, with its main video stream chosen.
pub struct Demuxer {
    path: PathBuf,
    input: Input,
    video_index: usize,
    /// Time base of each input stream.
    time_bases: Vec<Rational>,
    splicer: TimestampSplicer,
    /// Where (seconds into the output) the input's timestamps restarted.
    resets: Vec<f64>,
}

impl Demuxer {
    /// Open `path` and pick its main video stream; also returns the errors FFmpeg logged
    /// while opening (a track it could not parse: damage the caller counts). What the
    /// decoders probing the first packets log is set apart: a file may start mid-GOP (a
    /// capture, a stream-copy cut), its first packets then referring to pictures before it,
    /// which RAVE skips; the video decoder's words count only where the file starts on a
    /// clean keyframe (the caller decides). In an MPEG-TS or MPEG-PS file, which may start
    /// anywhere in its streams, the other decoders' words are left out too: RAVE decodes
    /// every audio packet again itself in the plan's `AudioCheck`, counting what is really
    /// damaged.
    pub fn open(path: &Path) -> Result<(Self, OpenErrors)> {
        let (input, logged) = crate::log_capture::capture_logged_errors(|| input::open(path));
        let input = input?;
        let mid_stream_start = sys::timestamps_may_restart(&input);
        let mut open_errors = OpenErrors::default();
        for e in logged {
            match (e.by_video_decoder, e.by_decoder && mid_stream_start) {
                (true, _) => open_errors.video_probe.push(e.text),
                (false, true) => {}
                (false, false) => open_errors.demuxer.push(e.text),
            }
        }
        let video_index = input::video_stream_index(&input, path)?;
        let time_bases = input.streams().map(|s| s.time_base()).collect();
        let watched = input
            .streams()
            .map(|s| {
                use ffmpeg_next::media::Type;
                matches!(
                    s.parameters().medium(),
                    Type::Video | Type::Audio | Type::Subtitle
                )
            })
            .collect();
        let splicer = TimestampSplicer::new(watched, sys::timestamps_may_restart(&input));
        let demuxer = Self {
            path: path.to_path_buf(),
            input,
            video_index,
            time_bases,
            splicer,
            resets: Vec::new(),
        };
        Ok((demuxer, open_errors))
    }

    /// The FFmpeg input (streams, chapters, metadata).
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Index of the main video stream.
    pub fn video_index(&self) -> usize {
        self.video_index
    }

    /// Time base of input stream `index`.
    pub fn time_base(&self, index: usize) -> Option<Rational> {
        self.time_bases.get(index).copied()
    }

    /// Where the timestamps restarted so far (seconds into the spliced timeline).
    pub fn timestamp_resets(&self) -> &[f64] {
        &self.resets
    }

    /// The next packet, on the spliced timeline; `None` at the end of the file, or where the
    /// rest of it cannot be read. Every failed read is reported to `on_error`.
    pub fn next_packet(&mut self, mut on_error: impl FnMut(&ffmpeg_next::Error)) -> Option<Packet> {
        let mut errors = 0;
        loop {
            let mut packet = Packet::empty();
            match packet.read(&mut self.input) {
                Ok(()) => {
                    if let Some(&tb) = self.time_bases.get(packet.stream())
                        && let Some(at) = self.splicer.place(&mut packet, tb)
                    {
                        self.resets.push(at);
                    }
                    return Some(packet);
                }
                Err(ffmpeg_next::Error::Eof) => return None,
                Err(e) => {
                    on_error(&e);
                    errors += 1;
                    if errors >= MAX_CONSECUTIVE_READ_ERRORS {
                        return None;
                    }
                }
            }
        }
    }

    /// Move to the video keyframe at or before `pts` (video time base), or before it: the
    /// next packets start there, or earlier. MPEG-TS/PS have no index: FFmpeg searches their
    /// bytes for a packet whose decode time is at or before the target, which may be a
    /// packet after the keyframe (its decode time is earlier than its presentation time),
    /// so there the target is [`UNINDEXED_SEEK_MARGIN_S`] earlier (the reader skips what
    /// comes before the first keyframe it meets). Only for inputs whose timestamps do not
    /// restart (a splice would make the timestamp ambiguous).
    pub fn seek_video(&mut self, pts: i64) -> Result<()> {
        if !self.resets.is_empty() {
            return Err(EngineError::InvariantViolation(format!(
                "{}: seeking in a file whose timestamps restart",
                self.path.display()
            )));
        }
        let pts = match sys::timestamps_may_restart(&self.input) {
            true => self.time_bases.get(self.video_index).map_or(pts, |tb| {
                let margin = UNINDEXED_SEEK_MARGIN_S * f64::from(tb.denominator())
                    / f64::from(tb.numerator().max(1));
                pts.saturating_sub(margin as i64)
            }),
            false => pts,
        };
        sys::seek_to_keyframe(&mut self.input, self.video_index, pts).map_err(|e| {
            EngineError::Decode(format!(
                "{}: cannot seek to the keyframe before timestamp {pts}: {e}",
                self.path.display()
            ))
        })
    }
}
