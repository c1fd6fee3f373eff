//! Stretches of an MPEG-TS file written twice in a row (`crate::ts_repeats`), found at
//! the seams the demuxer meets, and dropped: each packet read from the repeat's bytes is
//! duplicated data, said once the repeat is passed (`Demuxer::take_repaired`), which the
//! integrity checks count as damage.

use std::fs::File;
use std::ops::Range;

use ffmpeg_next::Packet;

use super::Demuxer;
use crate::splice::TimestampSplicer;

/// The repeats of one file: where the last seam was, and the repeat being dropped.
pub(super) struct Repeats {
    file: File,
    /// The byte position of the last seam met (a repeated stretch starts there or later).
    since: u64,
    /// The bytes of the repeat being dropped, and what was dropped of it.
    dropping: Option<(Range<u64>, Dropped)>,
    /// Each stream whose last packet was dropped: the frames FFmpeg split its PES into,
    /// without a byte position of their own, go with it.
    streams_dropping: Vec<bool>,
}

/// What was dropped of one repeat.
#[derive(Default)]
struct Dropped {
    /// The first dropped packet's decode time on its own clock, microseconds.
    at_us: Option<i64>,
    video: u64,
    other: u64,
}

impl Repeats {
    /// The repeats of the MPEG-TS file at `path` (with `streams` streams); `None` where it
    /// cannot be opened.
    pub(super) fn open(path: &std::path::Path, streams: usize) -> Option<Self> {
        Some(Self {
            file: File::open(path).ok()?,
            since: 0,
            dropping: None,
            streams_dropping: vec![false; streams],
        })
    }
}

impl Dropped {
    /// Count one packet dropped, of the video stream read or another.
    fn count(&mut self, video: bool) {
        match video {
            true => self.video += 1,
            false => self.other += 1,
        }
    }
}

impl Demuxer {
    /// Whether `packet` is read from a repeated stretch of the file and is dropped: from a
    /// seam at or before it where the bytes before the seam start again
    /// (`ts_repeats::repeat_before`), up to where they end; a frame FFmpeg split from a
    /// dropped PES goes with it. The seam, where it is no repeat's, is left for
    /// `Demuxer::part_at_seam`. A packet past the repeat ends it, and what was dropped is
    /// said.
    pub(super) fn drops_repeated(&mut self, packet: &Packet) -> bool {
        let (Some(repeats), Some(seams)) = (self.repeats.as_mut(), self.seams.as_mut()) else {
            return false;
        };
        let (pos, stream) = (packet.position(), packet.stream());
        let video = stream == self.video_index;
        if pos < 0 {
            let with_last = repeats.streams_dropping.get(stream) == Some(&true);
            let Some((_, dropped)) = repeats.dropping.as_mut().filter(|_| with_last) else {
                return false;
            };
            dropped.count(video);
            return true;
        }
        if let Some(seam) = seams.take_up_to(pos as u64) {
            let found = crate::ts_repeats::repeat_before(&mut repeats.file, seam, repeats.since);
            repeats.since = seam;
            match (found, repeats.dropping.as_mut()) {
                // The stretch written a third time: one repeat, longer.
                (Some(length), Some((range, _))) if range.end == seam => range.end += length,
                (Some(length), _) => {
                    self.end_repeat();
                    let repeats = self.repeats.as_mut().expect("repeats read");
                    repeats.dropping = Some((seam..seam + length, Dropped::default()));
                }
                (None, _) => self.pending_seam = Some(seam),
            }
        }
        let repeats = self.repeats.as_mut().expect("repeats read");
        let Some((range, dropped)) = repeats.dropping.as_mut() else {
            return false;
        };
        let drop = range.contains(&(pos as u64));
        let past = pos as u64 >= range.end;
        if drop {
            if dropped.at_us.is_none() {
                let tb = self.time_bases.get(stream).copied();
                dropped.at_us = tb.and_then(|tb| TimestampSplicer::decoded_own_us(packet, tb));
            }
            dropped.count(video);
        }
        if let Some(d) = repeats.streams_dropping.get_mut(stream) {
            *d = drop;
        }
        if past {
            self.end_repeat();
        }
        drop
    }

    /// Say the repeat being dropped, if any (past it, or at the file's end).
    pub(super) fn end_repeat(&mut self) {
        let Some(repeats) = self.repeats.as_mut() else {
            return;
        };
        repeats.streams_dropping.fill(false);
        let Some((range, dropped)) = repeats.dropping.take() else {
            return;
        };
        let at = dropped.at_us.unwrap_or(0) as f64 / 1e6;
        let bytes = range.end - range.start;
        self.repaired.push(format!(
            "the input repeats itself: the {bytes} bytes from byte {} on (from {at:.3} s on its own clock) repeat the bytes before them, a segment written more than once: its {} frame(s) and {} other packet(s) are duplicated data, dropped",
            range.start, dropped.video, dropped.other
        ));
    }
}
