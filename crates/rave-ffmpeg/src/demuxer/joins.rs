//! Parts joined with their clocks overlapping a little: a new part found from the file's
//! bytes (`TsSeams`) is moved on as a whole by its streams' overlap; without one, a stream
//! that steps back into its own last packets (its sound, FFmpeg's concat demuxer writing
//! MPEG-TS) is moved on alone. Either is taken only where each stream's next PES goes on
//! from the packet judged: after a damaged PES header it comes back to the old line.

use ffmpeg_next::{Packet, Rational};

use super::{Demuxer, RESTART_LOOKAHEAD, Repaired};
use crate::splice::{OFF_THE_LINE_US, TimestampSplicer};

impl Demuxer {
    /// Where `packet` (timestamps in `tb`) is the first handed out of a part that starts at
    /// a seam of the file's bytes (`TsSeams`) and overlaps the part before: the seam's byte
    /// position, and how far (microseconds) the part must move on for no stream of it to
    /// start before its stream's last packet ends, at most [`OFF_THE_LINE_US`] (further is
    /// a restart, judged by the timestamps). Each stream's first packet of the part within
    /// [`RESTART_LOOKAHEAD`] packets counts, where it is new data whose next PES goes on
    /// from it (`Demuxer::first_of_part_overlap_us`); one that is not makes the seam no
    /// part's start (the timestamps judge it). `None` after a seek, and where the clocks go
    /// on or leave a gap.
    pub(super) fn part_at_seam(
        &mut self,
        packet: &Packet,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<(i64, i64)> {
        let pos = packet.position() as i64;
        if self.sought || pos < 0 || !self.splicer.watches(packet.stream()) {
            return None;
        }
        let seam = self.pending_seam.filter(|&s| pos as u64 >= s)?;
        self.pending_seam = None;
        let seam = seam as i64;
        let mut seen = vec![false; self.time_bases.len()];
        seen[packet.stream()] = true;
        let mut shift = self.first_of_part_overlap_us(packet, 0, on_error)?;
        let mut i = 0;
        while self.read_ahead_to(i, on_error) {
            let p = &self.unplaced[i];
            i += 1;
            let s = p.stream();
            // (A stream FFmpeg added past its probe has no place: none is judged.)
            let unseen = seen.get(s) == Some(&false);
            if !unseen || (p.position() as i64) < seam || !self.splicer.judges(s) {
                continue;
            }
            seen[s] = true;
            let first = p.clone();
            shift = shift.max(self.first_of_part_overlap_us(&first, i, on_error)?);
            let all_seen = (0..seen.len()).all(|s| seen[s] || !self.splicer.judges(s));
            if all_seen {
                break;
            }
        }
        (shift > 0 && shift <= OFF_THE_LINE_US).then_some((seam, shift))
    }

    /// How far (microseconds) `first`, a stream's first packet of a new part (the packets
    /// after it read ahead from index `next_from` on), starts before the stream's last
    /// packet ends, where the part is placed by the shift so far (negative: after it;
    /// `i64::MIN` for a stream with no packet placed yet). `None` where it is no part's
    /// first packet: one of its stream's last packets again (repeated data), or its next
    /// PES not going on from it within half a packet (its header is damaged).
    fn first_of_part_overlap_us(
        &mut self,
        first: &Packet,
        next_from: usize,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<i64> {
        let s = first.stream();
        let Some(end) = self.splicer.stream_end_us(s) else {
            return Some(i64::MIN);
        };
        let tb = *self.time_bases.get(s)?;
        if self.splicer.repeats(first, tb) {
            return None;
        }
        if !self.next_pes_goes_on(first, next_from, tb, on_error)? {
            return None;
        }
        Some(end - self.splicer.part_start_us(first, tb)?)
    }

    /// Whether the next PES of `packet`'s stream (read ahead, from index `from` on) starts
    /// where `packet`'s PES ends, within half a packet (`Demuxer::next_pes_offset_us`): it
    /// goes on from it, where after a damaged header it comes back to the old line. `None`
    /// where none is found (or `packet`'s length is unknown).
    pub(super) fn next_pes_goes_on(
        &mut self,
        packet: &Packet,
        from: usize,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<bool> {
        let own = TimestampSplicer::length_us(packet, tb);
        let off = self.next_pes_offset_us(packet, from, tb, on_error)?;
        (own > 0).then_some(TimestampSplicer::in_line(off, own))
    }

    /// Put back `packet` (timestamps in `tb`) where it is a stream's first PES of a new part
    /// (or a frame of one) whose next PES does not go on from it: its header is damaged.
    /// Placed as it is, it would move its stream (kept after its own last packet, the rest
    /// of the part's sound seconds late). It is moved to end where the next PES starts, and
    /// said (`Demuxer::take_repaired`): the integrity checks count it as damage.
    pub(super) fn repair_part_start(
        &mut self,
        packet: &mut Packet,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) {
        let stream = packet.stream();
        if let Some((s, by)) = self.repairing {
            if s == stream && packet.position() < 0 {
                TimestampSplicer::move_packet(packet, by, tb);
                return;
            }
            if s == stream {
                self.repairing = None;
            }
        }
        let first = self.splicer.starts_part(stream) && !self.splicer.of_part_before(packet, tb);
        if !first || packet.position() < 0 {
            return;
        }
        let own = TimestampSplicer::length_us(packet, tb);
        let Some(off) = self.next_pes_offset_us(packet, 0, tb, on_error) else {
            return;
        };
        if own <= 0 || TimestampSplicer::in_line(off, own) {
            return;
        }
        let at = TimestampSplicer::decoded_own_us(packet, tb).unwrap_or(0) as f64 / 1e6;
        TimestampSplicer::move_packet(packet, off, tb);
        self.repairing = Some((stream, off));
        self.repaired.push(Repaired {
            text: format!(
                "stream #{stream}: the first packet of a joined part, at {at:.3} s on its own clock, is {:.3} s off the packets after it: it is damaged, so the packet is put back before them",
                off.abs() as f64 / 1e6
            ),
            frames_dropped: 0,
            packets_dropped: 0,
            explains_others: false,
        });
    }

    /// How far (microseconds) `packet` (timestamps in `tb`) steps back into its stream's
    /// last packets (`TimestampSplicer::steps_back`), where its stream's next PES goes on
    /// from it: starts where its PES's frames end, closer to that than to where they would
    /// end had the stream gone on in step (a damaged header moves one PES; the next comes
    /// back to the old line). Not for video: a part's first frames, shown after its
    /// reordering delay, may decode before the last part's last frame and still be shown
    /// after it (moved on, the picture would hold); a joined part's picture is placed with
    /// its part at the seam. `None` where it does not step back, or nothing confirms it.
    pub(super) fn join_overlap_us(
        &mut self,
        packet: &Packet,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<i64> {
        let video = (self.input.stream(packet.stream()))
            .is_some_and(|s| s.parameters().medium() == ffmpeg_next::media::Type::Video);
        if self.sought || video {
            return None;
        }
        let by = self.splicer.steps_back(packet, tb)?;
        let own = TimestampSplicer::length_us(packet, tb);
        let off = self.next_pes_offset_us(packet, 0, tb, on_error)?;
        (own > 0 && off.abs() < by / 2).then_some(by)
    }

    /// How far (microseconds) the next PES of `packet`'s stream (its next packet with a
    /// byte position of its own, among those read ahead from index `from` on, within
    /// [`RESTART_LOOKAHEAD`] packets) starts after `packet`'s PES ends (the end of the
    /// frames FFmpeg split it into, timed from its header); `None` where none is found.
    fn next_pes_offset_us(
        &mut self,
        packet: &Packet,
        from: usize,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> Option<i64> {
        let own = TimestampSplicer::length_us(packet, tb);
        let mut run_end = TimestampSplicer::decoded_own_us(packet, tb)? + own;
        let mut i = from;
        while i < RESTART_LOOKAHEAD && self.read_ahead_to(i, on_error) {
            let p = &self.unplaced[i];
            i += 1;
            if p.stream() != packet.stream() {
                continue;
            }
            let decoded = TimestampSplicer::decoded_own_us(p, tb)?;
            if p.position() < 0 || p.position() == packet.position() {
                run_end = run_end.max(decoded + TimestampSplicer::length_us(p, tb));
                continue;
            }
            return Some(decoded - run_end);
        }
        None
    }
}
