//! Stretches of an MPEG-TS file written twice in a row (`crate::ts_repeats`), found at
//! the seams the demuxer meets, and dropped: each packet read from the dropped copy's
//! bytes is duplicated data, said once the copy is passed (`Demuxer::take_repaired`), which
//! the integrity checks count as damage. From a seam, the stretch to the next seam is
//! looked for again right after it (the first copy dropped: a download retried writes the
//! part it got, then the whole), else the stretch from the seam on among the bytes before
//! it (the copy after dropped: several segments written again as a block).

use std::collections::VecDeque;
use std::fs::File;

use ffmpeg_next::Packet;

use super::{Demuxer, Repaired};
use crate::splice::TimestampSplicer;
use crate::ts_repeats::{self, MAX_REPEAT_BYTES, Repeat};

/// Seams looked back over for the start of a block written again.
const SEAMS_BACK: usize = 8;

/// The repeats of one file: the seams met lately, and the copy being dropped.
pub(super) struct Repeats {
    file: File,
    /// The byte positions of the last seams met (a stretch written again starts at one).
    seams: VecDeque<u64>,
    /// Where the last copy dropped ends: no stretch before it is looked for again.
    dropped_to: u64,
    /// The copy being dropped, and what was dropped of it.
    dropping: Option<(Repeat, Dropped)>,
    /// Each stream whose last packet was dropped: the frames FFmpeg split its PES into,
    /// without a byte position of their own, go with it.
    streams_dropping: Vec<bool>,
}

/// What was dropped of one copy.
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
            seams: VecDeque::new(),
            dropped_to: 0,
            dropping: None,
            streams_dropping: vec![false; streams],
        })
    }

    /// The copy to drop from `seam` on, if any: the stretch to `next` (the next seam)
    /// written again right after it, else the stretch from the seam on written before.
    fn found_at(&mut self, seam: u64, next: Option<u64>) -> Option<Repeat> {
        let ahead = next.and_then(|n| ts_repeats::repeated_ahead(&mut self.file, seam, n));
        let since = (self.seams.front().copied().unwrap_or(0)).max(self.dropped_to);
        if self.seams.len() == SEAMS_BACK {
            self.seams.pop_front();
        }
        self.seams.push_back(seam);
        ahead.or_else(|| ts_repeats::repeat_before(&mut self.file, seam, since))
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
    /// Whether `packet` is read from a copy of a stretch written twice in a row and is
    /// dropped (`Repeats::found_at`, at the seam at or before it); a frame FFmpeg split from
    /// a dropped PES goes with it. The seam, where it starts no copy, is left for
    /// `Demuxer::part_at_seam`. A packet past the copy ends it, and what was dropped is
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
            self.last_seam = Some(seam);
            let next = seams.next_after(seam, MAX_REPEAT_BYTES);
            match (repeats.found_at(seam, next), repeats.dropping.as_mut()) {
                // The stretch written a third time: one copy dropped, longer.
                (Some(r), Some((d, _))) if d.bytes.end == r.bytes.start => {
                    d.bytes.end = r.bytes.end;
                    repeats.dropped_to = r.bytes.end;
                }
                (Some(r), _) => {
                    self.end_repeat();
                    let repeats = self.repeats.as_mut().expect("repeats read");
                    repeats.dropped_to = r.bytes.end;
                    repeats.dropping = Some((r, Dropped::default()));
                }
                (None, _) => self.pending_seam = Some(seam),
            }
        }
        let repeats = self.repeats.as_mut().expect("repeats read");
        let Some((repeat, dropped)) = repeats.dropping.as_mut() else {
            return false;
        };
        let drop = repeat.bytes.contains(&(pos as u64));
        let past = pos as u64 >= repeat.bytes.end;
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

    /// Say the copy being dropped, if any (past it, or at the file's end).
    pub(super) fn end_repeat(&mut self) {
        let Some(repeats) = self.repeats.as_mut() else {
            return;
        };
        repeats.streams_dropping.fill(false);
        let Some((repeat, dropped)) = repeats.dropping.take() else {
            return;
        };
        let at = dropped.at_us.unwrap_or(0) as f64 / 1e6;
        let (start, end) = (repeat.bytes.start, repeat.bytes.end);
        let what = match repeat.first_copy {
            true => {
                "are written again right after them (a segment written twice, the first time whole or cut short)"
            }
            false => "repeat the bytes just before them (segments written twice)",
        };
        self.repaired.push(Repaired {
            text: format!(
                "the input repeats itself: bytes {start} to {end} (from {at:.3} s on their own clock) {what}: the copy's {} frame(s) and {} other packet(s) are duplicated data, dropped",
                dropped.video, dropped.other
            ),
            frames_dropped: dropped.video,
            packets_dropped: dropped.other,
            explains_others: false,
        });
    }
}
