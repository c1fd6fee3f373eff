//! A join found from the file's bytes (`crate::ts_seams::TsSeams`): the part that starts
//! there is moved on as a whole by how far its streams overlap the part before, so each
//! keeps its place against the others (moving one stream alone, by its own overlap, would
//! put its sound later against its picture at every join, 45 ms more each time).

use ffmpeg_next::{Packet, Rational};

use super::TimestampSplicer;

impl TimestampSplicer {
    /// Whether stream `index` can show a join (video, audio, subtitles).
    pub fn watches(&self, index: usize) -> bool {
        self.enabled && self.watched.get(index) == Some(&true)
    }

    /// Where `packet` (timestamps in `tb`) would be shown on the timeline as the first of a
    /// part placed by the shift so far (its stream's extra shift left out: a new part
    /// starts without one), microseconds.
    pub fn part_start_us(&self, packet: &Packet, tb: Rational) -> Option<i64> {
        Some(Self::shown_us(packet, tb)? + self.offset_us)
    }

    /// Whether stream `index`'s next packet is its first of the part that began at the
    /// latest restart.
    pub fn starts_part(&self, index: usize) -> bool {
        self.streams.get(index).is_some_and(|p| p.after_reset)
    }

    /// Whether `packet` (timestamps in `tb`) is one of the last packets of the part before
    /// the latest restart, handed out after it (`before_reset_shift`).
    pub fn of_part_before(&self, packet: &Packet, tb: Rational) -> bool {
        self.before_reset_shift(packet, tb).is_some()
    }

    /// Whether a packet `off_us` away from where the packets before it end (packets
    /// `length_us` long, where known) is in line with them: within half a packet, and 2 ms
    /// of a muxer's rounding.
    pub fn in_line(off_us: i64, length_us: i64) -> bool {
        length_us > 0 && off_us.abs() <= (length_us / 2).max(2_000)
    }

    /// Move `packet`'s timestamps (in `tb`) by `by_us` on its own clock (a damaged one
    /// put back).
    pub fn move_packet(packet: &mut Packet, by_us: i64, tb: Rational) {
        super::shift_packet(packet, by_us, tb);
    }

    /// Where stream `index`'s packets placed so far end on the timeline, for a part after
    /// them (`StreamPlace::end_in_step_us`), microseconds.
    pub fn stream_end_us(&self, index: usize) -> Option<i64> {
        self.streams.get(index)?.end_in_step_us
    }

    /// Whether `packet` (timestamps in `tb`) is one of its stream's last packets again,
    /// whole or cut short (`step_back::Recent::holds`): repeated data, no new part.
    pub fn repeats(&self, packet: &Packet, tb: Rational) -> bool {
        self.recent
            .get(packet.stream())
            .is_some_and(|r| r.holds(packet, tb))
    }

    /// A new part starts at byte `seam_pos`: its packets (those read from there on) are
    /// moved on by `shift_us` more, each stream without an extra shift of its own; the last
    /// packets of the part before, handed out later, keep that part's. Where the timeline
    /// was, seconds.
    pub fn splice_at_seam(&mut self, shift_us: i64, seam_pos: i64) -> f64 {
        let at = self.part_end_us().unwrap_or(0);
        self.before_reset = Some((self.offset_us, seam_pos));
        self.offset_us += shift_us;
        self.begin_part();
        at as f64 / 1e6
    }
}
