//! `Demuxer`: one input file's container, read packet by packet on one continuous timeline
//! (timestamp restarts of transport streams spliced), seekable to a video keyframe.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use ffmpeg_next::format::context::Input;
use ffmpeg_next::{Packet, Rational};
use rave_core::error::{EngineError, Result};

use crate::decoded::StepBack;
use crate::splice::TimestampSplicer;
use crate::ts_seams::TsSeams;
use crate::{input, sys};
use replays::Replayed;

mod fragments;
mod joins;
mod parts;
mod repeats;
mod replays;
mod restart_check;

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
    /// Where a stream's timestamps stepped back into its own last packets.
    steps: Vec<StepBack>,
    /// The stream whose first PES of a new part was put back, and by how much
    /// (microseconds): the frames FFmpeg split it into (no byte position of their own) move
    /// with it.
    repairing: Option<(usize, i64)>,
    /// What was said of each such PES, and of each copy of a stretch written twice
    /// dropped (`repeats`), until the reader takes it.
    repaired: Vec<Repaired>,
    /// Where new transport streams start in the file's bytes (MPEG-TS only).
    seams: Option<TsSeams>,
    /// A seam met and no repeat's start (`Demuxer::drops_repeated`), for
    /// `Demuxer::part_at_seam`.
    pending_seam: Option<u64>,
    /// Stretches of the file written twice in a row, dropped (MPEG-TS only).
    repeats: Option<repeats::Repeats>,
    /// Packets read before, again, where the file goes on after them from before them:
    /// dropped (MPEG-TS/PS).
    replays: Option<replays::Replays>,
    /// Whether the reading was moved (`seek_video`): it starts where the stream's packets
    /// before are not read, and no step back is judged (a file is cut into parts only
    /// where its whole reading found none).
    sought: bool,
    /// Packets read ahead of a restart candidate, not placed on the timeline yet.
    unplaced: VecDeque<Packet>,
    /// Packets handed out, and how many had been when the timestamps last restarted.
    handed_out: usize,
    last_restart: Option<usize>,
    /// Parts joined whose video has started (`Demuxer::video_parts`), and where the seam
    /// met last is in the file's bytes.
    video_parts: usize,
    last_seam: Option<u64>,
    /// Whether the packet handed out last is of the part before (`Demuxer::of_part_before`).
    of_part_before: bool,
    /// A joined part's first fragment, cut off a packet of the stream in part only: the
    /// rest, handed out apart, is dropped (`Demuxer::cut_seam_fragment`).
    fragment_rest: Option<(usize, Vec<u8>)>,
}

/// Damage the demuxer mended, as said to the integrity checks: what it was, and the video
/// frames and other packets it dropped (none for a packet put back in its place).
#[derive(Debug, Clone)]
pub struct Repaired {
    /// What was mended, in words.
    pub text: String,
    /// Video frames dropped.
    pub frames_dropped: u64,
    /// Packets of other streams dropped.
    pub packets_dropped: u64,
    /// Whether it explains the other damage found (a stream whose codec changes: its
    /// packets after the change misread), so the report names it first.
    pub explains_others: bool,
}

/// What one read of the demuxer gives.
pub enum Demuxed {
    /// A packet, on the spliced timeline.
    Packet(Packet),
    /// A packet of a stretch of the file written twice, dropped (`Demuxer::take_repaired`
    /// says so once the stretch is passed), or held while that is judged (handed out
    /// later where it is not).
    Repeated,
}

/// Packets read ahead, at most, to tell a restart of the timestamps from one damaged one.
const RESTART_LOOKAHEAD: usize = 256;

/// A stream's next frames that tell where a part's first frame, its presentation time
/// damaged, belongs: more than a B-frame reordering holds back.
const NEXT_FRAMES: usize = 8;

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
        let seams = match input.format().name().split(',').any(|f| f == "mpegts") {
            true => TsSeams::open(path),
            false => None,
        };
        let streams = input.streams().count();
        let replays = sys::timestamps_may_restart(&input).then(|| {
            use ffmpeg_next::media::Type;
            let judged = input
                .streams()
                .map(|s| matches!(s.parameters().medium(), Type::Video | Type::Audio));
            replays::Replays::new(judged.collect())
        });
        let demuxer = Self {
            path: path.to_path_buf(),
            input,
            video_index,
            time_bases,
            splicer,
            resets: Vec::new(),
            steps: Vec::new(),
            repairing: None,
            repaired: Vec::new(),
            repeats: seams
                .as_ref()
                .and_then(|_| repeats::Repeats::open(path, streams)),
            seams,
            replays,
            pending_seam: None,
            sought: false,
            unplaced: VecDeque::new(),
            handed_out: 0,
            last_restart: None,
            video_parts: 0,
            last_seam: None,
            of_part_before: false,
            fragment_rest: None,
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

    /// The damage mended since this was last asked: the damaged first PES of joined parts
    /// put back, the copies of stretches written twice dropped.
    pub fn take_repaired(&mut self) -> Vec<Repaired> {
        std::mem::take(&mut self.repaired)
    }

    /// Where a stream's timestamps stepped back so far, and it was moved on.
    pub fn timestamp_steps(&self) -> &[StepBack] {
        &self.steps
    }

    /// The next packet, on the spliced timeline; `None` at the end of the file, or where the
    /// rest of it cannot be read. Every failed read is reported to `on_error`. A packet that
    /// shows a restart of the timestamps is one only where the next packets agree
    /// ([`Demuxer::restart_confirmed`]); else its timestamp is damaged, and it is passed on
    /// unspliced (the integrity checks judge it). A packet that steps back into its own
    /// stream's last packets, its next PES going on from it (`Demuxer::join_overlap_us`),
    /// moves its stream on: parts joined with their clocks overlapping a little.
    pub fn next_packet(
        &mut self,
        mut on_error: impl FnMut(&ffmpeg_next::Error),
    ) -> Option<Demuxed> {
        self.of_part_before = false;
        let next = match self.unplaced.pop_front() {
            Some(p) => Some(p),
            None => self.read_one(&mut on_error),
        };
        let Some(mut packet) = next else {
            self.end_repeat();
            self.note_codec_changes();
            let held = self.replays_left_at_end();
            if held.is_empty() {
                return None;
            }
            self.unplaced.extend(held);
            return self.next_packet(on_error);
        };
        if self.drops_repeated(&packet) {
            return Some(Demuxed::Repeated);
        }
        match self.judge_replayed(&packet) {
            Replayed::Kept => {}
            Replayed::Held => return Some(Demuxed::Repeated),
            Replayed::GiveBack(held) => {
                self.unplaced.push_front(packet);
                for p in held.into_iter().rev() {
                    self.unplaced.push_front(p);
                }
                return self.next_packet(on_error);
            }
        }
        let Some(&tb) = self.time_bases.get(packet.stream()) else {
            return Some(Demuxed::Packet(packet));
        };
        self.handed_out += 1;
        self.repair_part_start(&mut packet, tb, &mut on_error);
        // The first packet of a part joined on at a seam of the file's bytes, the part
        // overlapping the one before: the part moves on as a whole.
        if let Some((seam, shift)) = self.part_at_seam(&packet, &mut on_error) {
            self.resets.push(self.splicer.splice_at_seam(shift, seam));
            self.last_restart = Some(self.handed_out);
            if let Some(replays) = self.replays.as_mut() {
                replays.on_restart(self.resets.len());
            }
        }
        // A stream that restarts soon after another did catches up with the same splice.
        let catches_up = self
            .last_restart
            .is_some_and(|at| self.handed_out - at <= RESTART_LOOKAHEAD)
            && self.splicer.catches_up(&packet, tb);
        // A packet far ahead of the file whose stream comes back after it: a damaged
        // timestamp, which must not move its stream's place (every later packet of the
        // stream would show a restart until it caught up, and the next part would be placed
        // after it), nor be taken for a restart forward (a join right after it would
        // confirm one).
        if self.splicer.leaps_ahead(&packet, tb)
            && self.own_stream_comes_back(&packet, tb, &mut on_error)
        {
            self.splicer.shift_only(&mut packet, tb);
            return Some(Demuxed::Packet(packet));
        }
        let candidate = self.splicer.shows_reset(&packet, tb) && !catches_up;
        // A restart shown by a packet whose next PES does not go on from it is shown by a
        // damaged one (the part's first PES, its header damaged): the next packets show it.
        let restart = candidate
            && self.restart_confirmed(&packet, tb, &mut on_error)
            && self.next_pes_goes_on(&packet, 0, tb, &mut on_error) != Some(false);
        // A stream stepping back into its own last packets where parts join, the others
        // going on (or a restart that they deny), plays on from them.
        if !restart
            && !catches_up
            && let Some(by) = self.join_overlap_us(&packet, tb, &mut on_error)
        {
            self.splicer.step_on(packet.stream(), by);
            let own_us = TimestampSplicer::decoded_own_us(&packet, tb).unwrap_or(0);
            self.steps.push(StepBack {
                stream: packet.stream(),
                at_s: self.splicer.on_timeline_s(packet.stream(), own_us),
                by_s: by as f64 / 1e6,
            });
        } else if candidate && !restart {
            self.splicer.shift_only(&mut packet, tb);
            return Some(Demuxed::Packet(packet));
        }
        if restart {
            let corrected = self.corrected_restart_shown_us(&packet, tb, &mut on_error);
            let at = corrected.or(TimestampSplicer::shown_us(&packet, tb));
            let lead = at.map_or(0, |at| self.part_lead_us(&packet, at, &mut on_error));
            self.splicer.lead_next_reset(lead, corrected);
        }
        let video = packet.stream() == self.video_index;
        let starting = video && self.splicer.starts_part(self.video_index);
        self.of_part_before = self.splicer.of_part_before(&packet, tb);
        let reset = self.splicer.place(&mut packet, tb);
        if let Some(at) = reset {
            self.resets.push(at);
            self.last_restart = Some(self.handed_out);
        }
        if let Some(replays) = self.replays.as_mut().filter(|_| reset.is_some()) {
            replays.on_restart(self.resets.len());
        }
        if starting || reset.is_some() {
            self.note_video_part(&packet, video);
        }
        Some(Demuxed::Packet(packet))
    }

    /// How long before `restart` (a packet confirmed to restart the timestamps; `tb` its
    /// time base) the new part starts, on the part's own clock (microseconds): the other
    /// streams' first packets of it (within [`RESTART_LOOKAHEAD`] packets; those not going
    /// on in step with their stream, which the part before's last ones do) may be shown
    /// earlier, as a part's sound a fraction of a second before its picture, whose PES
    /// comes first in the file, or an MPEG-PS part's picture, whose PES starts before the
    /// sound that showed the restart. A first packet whose next PES does not go on from it
    /// is damaged, and passed over. Ten seconds at most (a damaged timestamp). It is
    /// counted from `at`, where the restart is shown (its own presentation time, or
    /// [`Demuxer::corrected_restart_shown_us`]).
    fn part_lead_us(
        &mut self,
        restart: &Packet,
        at: i64,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> i64 {
        let streams = self.time_bases.len();
        let mut seen = vec![false; streams];
        seen[restart.stream()] = true;
        let mut lead = 0;
        let mut i = 0;
        while seen
            .iter()
            .enumerate()
            .any(|(s, &v)| !v && self.splicer.judges(s))
        {
            if !self.read_ahead_to(i, on_error) {
                break;
            }
            let p = &self.unplaced[i];
            i += 1;
            let s = p.stream();
            let Some(&tb) = self.time_bases.get(s) else {
                continue;
            };
            if seen[s] || !self.splicer.judges(s) || self.splicer.continues(p, tb) {
                continue;
            }
            // A part's first packet starts a PES (the frames FFmpeg splits one into have no
            // byte position of their own); one whose next PES does not go on from it is
            // damaged: the stream's next PES is its first.
            let first = p.clone();
            if first.position() < 0 || self.next_pes_goes_on(&first, i, tb, on_error) == Some(false)
            {
                continue;
            }
            seen[s] = true;
            if let Some(shown) = TimestampSplicer::shown_us(&first, tb) {
                lead = lead.max(at - shown);
            }
        }
        lead
    }

    /// Where `restart` (a packet confirmed to restart the timestamps; `tb` its time base)
    /// is shown on its part's clock (microseconds), where its own presentation time is out
    /// of step with its decode time (`TimestampSplicer::shown_in_step_us`: a damaged PES
    /// header): one frame before the earliest of its stream's next frames of the part
    /// (within [`RESTART_LOOKAHEAD`] packets; a frame is their closest spacing), as the
    /// part's first frame is; with fewer than two of them, its decode time. `None` where
    /// its own is in step.
    fn corrected_restart_shown_us(
        &mut self,
        restart: &Packet,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<i64> {
        if TimestampSplicer::shown_in_step_us(restart, tb).is_some() {
            return None;
        }
        let decoded = TimestampSplicer::decoded_own_us(restart, tb).unwrap_or(0);
        let mut next = Vec::new();
        let mut i = 0;
        while next.len() < NEXT_FRAMES && self.read_ahead_to(i, on_error) {
            let p = &self.unplaced[i];
            i += 1;
            if p.stream() == restart.stream() && !self.splicer.continues(p, tb) {
                next.extend(TimestampSplicer::shown_in_step_us(p, tb));
            }
        }
        next.sort_unstable();
        next.dedup();
        let frame = next.windows(2).map(|w| w[1] - w[0]).min();
        Some(match (next.first(), frame) {
            (Some(&first), Some(frame)) => first - frame,
            _ => decoded,
        })
    }

    /// Whether packet `i` of those read ahead is there, reading on to it where it is not
    /// yet (within [`RESTART_LOOKAHEAD`] packets, and the file's end).
    fn read_ahead_to(&mut self, i: usize, on_error: &mut impl FnMut(&ffmpeg_next::Error)) -> bool {
        while self.unplaced.len() <= i {
            if self.unplaced.len() >= RESTART_LOOKAHEAD {
                return false;
            }
            match self.read_one(on_error) {
                Some(p) => self.unplaced.push_back(p),
                None => return false,
            }
        }
        true
    }

    /// One packet from the file as FFmpeg reads it; `None` at its end, or after
    /// [`MAX_CONSECUTIVE_READ_ERRORS`] failed reads in a row (each reported to `on_error`).
    fn read_one(&mut self, on_error: &mut impl FnMut(&ffmpeg_next::Error)) -> Option<Packet> {
        let mut errors = 0;
        loop {
            let mut packet = Packet::empty();
            match packet.read(&mut self.input) {
                Ok(()) if self.cut_seam_fragment(&mut packet) => {}
                Ok(()) => return Some(packet),
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
        if !self.resets.is_empty() || !self.steps.is_empty() {
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
        self.unplaced.clear();
        self.sought = true;
        sys::seek_to_keyframe(&mut self.input, self.video_index, pts).map_err(|e| {
            EngineError::Decode(format!(
                "{}: cannot seek to the keyframe before timestamp {pts}: {e}",
                self.path.display()
            ))
        })
    }
}
