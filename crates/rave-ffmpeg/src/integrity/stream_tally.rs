//! `StreamTally`: what reading one stream of an input saw (packets, where it ends, gaps
//! between its audio packets), and whether a copied stream's packet keeps its timestamps in
//! an order a muxer can store.

use ffmpeg_next::{Packet, Rational};

use super::outliers::{GRID_PACKETS, GRID_S};
use crate::declared::Declared;

/// The role of a stream in the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Video,
    Audio,
    /// Copied but not audio (subtitles): equal timestamps are allowed.
    Other,
    /// Not read (data streams, attachments).
    Ignored,
    /// Made of damaged data (`flv_phantoms`): each packet is damage.
    Phantom,
    /// Audio or video whose parameters FFmpeg could not read while opening the file, so
    /// left out of the output: where it has packets after all (the parts of a join written
    /// with other transport PIDs), they are lost, and that is damage.
    Unread,
}

/// One stream's tally.
#[derive(Debug, Clone)]
pub(super) struct StreamTally {
    pub(super) role: Role,
    /// Seconds per time-base unit.
    pub(super) unit_s: f64,
    pub(super) declared: Declared,
    pub(super) packets: u64,
    /// The latest `pts + duration` seen (for a video packet with a decode time only, that
    /// plus its reordering: `reorder_frames`).
    pub(super) end: Option<i64>,
    last_dts: Option<i64>,
    /// CRC-32 of the last admitted packet's data (to tell a repeated packet from one that
    /// only shares its timestamp).
    last_data: u32,
    /// The last nonzero packet duration.
    pub(super) typical: i64,
    /// Where the previous packet ended (`pts + duration`), for gaps between packets.
    last_end: Option<i64>,
    /// Whether the previous packet carried its own duration: a gap after one that did not
    /// is no measure (Vorbis in NUT has none, and its packets are 128 or 1024 samples).
    last_own_length: bool,
    /// Time-base units of gaps between consecutive packets wider than 1.5 packets.
    pub(super) gaps: i64,
    /// Audio packets in a row that started where the one before ended (within
    /// `outliers::GRID_S`): a stream on an exact grid, where a packet off it stands out.
    grid_run: u32,
    /// Where the first of them starts (the end of the packet before it).
    pub(super) first_gap: Option<i64>,
    /// Where the input's timestamps restarted (a join), in time-base units: a gap across
    /// one is the join's (a part whose sound starts after its picture), not counted.
    pub(super) joins: Vec<i64>,
    /// Where the previous packet started: the spacing stands for a duration where no
    /// packet carries one (ALAC in Matroska).
    last_start: Option<i64>,
    /// The latest time of a counted packet ([`StreamTally::time_s`]), in seconds.
    pub(super) latest_s: Option<f64>,
    /// Frames a video stream's pictures are shown after they are decoded, at most (its
    /// B-frame reordering): a packet with a decode time only (ASF, AVI) ends that much
    /// later on screen.
    pub(super) reorder_frames: i64,
}

impl StreamTally {
    /// An empty tally of a stream of `role` in time base `tb` that declares `declared`.
    pub(super) fn new(role: Role, tb: Rational, declared: Declared) -> Self {
        let unit_s = match tb.denominator() {
            0 => 0.0,
            d => f64::from(tb.numerator()) / f64::from(d),
        };
        Self {
            role,
            unit_s,
            declared,
            packets: 0,
            end: None,
            last_dts: None,
            last_data: 0,
            typical: 0,
            last_end: None,
            last_own_length: false,
            gaps: 0,
            grid_run: 0,
            first_gap: None,
            joins: Vec::new(),
            last_start: None,
            latest_s: None,
            reorder_frames: 0,
        }
    }

    /// Count `packet` of this stream: its duration, where it ends, and for audio the gap
    /// before it. Returns where it starts (its presentation time, or its decode time).
    pub(super) fn count(&mut self, packet: &Packet) -> Option<i64> {
        self.packets += 1;
        if let Some(t) = self.time_s(packet) {
            self.latest_s = Some(self.latest_s.map_or(t, |l| l.max(t)));
        }
        if packet.duration() > 0 {
            self.typical = packet.duration();
        }
        let start = packet.pts().or(packet.dts());
        if self.role == Role::Audio {
            if self.typical == 0
                && let (Some(s), Some(previous)) = (start, self.last_start)
                && s > previous
            {
                self.typical = s - previous;
            }
            self.last_start = start.or(self.last_start);
        }
        if let Some(s) = start {
            let dur = self.length_of(packet);
            let shown_later = match (self.role, packet.pts()) {
                (Role::Video, None) => self.reorder_frames * self.typical,
                _ => 0,
            };
            let end = s + dur + shown_later;
            self.end = Some(self.end.map_or(end, |e| e.max(end)));
            if self.role == Role::Audio {
                if let Some(last) = self.last_end.filter(|_| self.last_own_length)
                    && s - last > self.typical + self.typical / 2
                    && !self
                        .joins
                        .iter()
                        .any(|&j| j >= last - self.typical && j <= s)
                {
                    self.gaps += s - last;
                    self.first_gap.get_or_insert(last);
                }
                let on_grid = (self.last_end.filter(|_| self.last_own_length))
                    .is_some_and(|last| ((s - last) as f64 * self.unit_s).abs() <= GRID_S);
                self.grid_run = if on_grid {
                    self.grid_run.saturating_add(1)
                } else {
                    0
                };
                // A packet of unknown length (a fragmented MP4's first AAC packet, which
                // lasts until the next) ends where the next one starts: no gap after it.
                self.last_end = (dur > 0).then_some(s + dur);
                self.last_own_length = packet.duration() > 0;
            }
        }
        start
    }

    /// Whether a copied stream's `packet` keeps the decode order a muxer can store: its
    /// decode time does not go back, it is not shown before it is decoded, and (audio) it
    /// is not the packet before it again. Two audio packets may share a rounded timestamp
    /// (a join in millisecond Matroska); the same packet twice is duplicated data.
    pub(super) fn in_order(&mut self, packet: &Packet) -> bool {
        let Some(dts) = packet.dts() else {
            return true;
        };
        let data = packet.data().map_or(0, crc32fast::hash);
        let repeated =
            self.last_dts == Some(dts) && self.role == Role::Audio && self.last_data == data;
        let backwards = self.last_dts.is_some_and(|last| dts < last) || repeated;
        let inverted = packet.pts().is_some_and(|pts| pts < dts);
        if backwards || inverted {
            return false;
        }
        self.last_dts = Some(dts);
        self.last_data = data;
        true
    }

    /// `packet`'s decode time in seconds; an audio packet's presentation time where it has
    /// none (audio is not reordered). A video packet without a decode time has none here:
    /// its presentation time runs ahead of the packets decoded before it (B-frames).
    pub(super) fn time_s(&self, packet: &Packet) -> Option<f64> {
        let presentation = packet.pts().filter(|_| self.role != Role::Video);
        packet
            .dts()
            .or(presentation)
            .map(|t| t as f64 * self.unit_s)
    }

    /// Where an audio stream's next packet should start, in seconds: where the previous one
    /// ended (unknown after a packet of unknown length, and for other streams).
    pub(super) fn expected_next_s(&self) -> Option<f64> {
        self.expected_end().map(|e| e as f64 * self.unit_s)
    }

    /// Whether the audio stream's latest packets followed on from each other exactly, enough
    /// of them (`outliers::GRID_PACKETS`) for one off the grid to stand out.
    pub(super) fn on_grid(&self) -> bool {
        self.grid_run >= GRID_PACKETS
    }

    /// Whether every packet of the audio stream so far followed on exactly from the one
    /// before, fewer than `outliers::GRID_PACKETS` of them (its start: the packets after a
    /// packet off the grid must show the grid, `leaps::follow_on_exactly`).
    pub(super) fn on_grid_from_start(&self) -> bool {
        self.packets >= 1 && u64::from(self.grid_run) + 1 == self.packets
    }

    /// A video `packet`'s (presentation, decode) times in seconds, where it has both.
    pub(super) fn shown_and_decoded_s(&self, packet: &Packet) -> Option<(f64, f64)> {
        let (pts, dts) = (packet.pts()?, packet.dts()?);
        Some((pts as f64 * self.unit_s, dts as f64 * self.unit_s))
    }

    /// Where an audio stream's next packet should start, in time-base units.
    pub(super) fn expected_end(&self) -> Option<i64> {
        self.last_end
    }

    /// An audio `packet`'s length in time-base units: its own, or the stream's last one.
    pub(super) fn length_of(&self, packet: &Packet) -> i64 {
        match packet.duration() {
            d if d > 0 => d,
            _ => self.typical,
        }
    }

    /// Where the stream's packets end, in seconds.
    pub(super) fn end_s(&self) -> Option<f64> {
        self.end.map(|e| e as f64 * self.unit_s)
    }

    /// The last packet duration, in seconds.
    pub(super) fn typical_s(&self) -> f64 {
        self.typical as f64 * self.unit_s
    }

    /// Seconds the stream falls short of `declared_end_s` by, beyond 1.5 packets; a stream
    /// with no packet at all is short from `start_s`.
    pub(super) fn shortfall_s(&self, declared_end_s: f64, start_s: f64) -> f64 {
        let tolerance = 1.5 * self.typical_s() + 0.002;
        let short = declared_end_s - self.end_s().unwrap_or(start_s);
        if short > tolerance { short } else { 0.0 }
    }

    /// Where the container declares the stream ends, in seconds.
    pub(super) fn declared_end_s(&self) -> Option<f64> {
        self.declared.end.map(|e| e as f64 * self.unit_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gap_follows_a_packet_of_unknown_length() {
        let mut t = StreamTally::new(Role::Audio, Rational::new(1, 48000), Declared::default());
        let packet = |pts: i64, duration: i64| {
            let mut p = Packet::empty();
            p.set_pts(Some(pts));
            p.set_dts(Some(pts));
            p.set_duration(duration);
            p
        };
        // The first packet has no length; the next starts 3840 ticks (80 ms) later.
        t.count(&packet(0, 0));
        t.count(&packet(3840, 1024));
        t.count(&packet(4864, 1024));
        assert_eq!(t.gaps, 0);
        // A real gap after a packet of known length still counts.
        t.count(&packet(9000, 1024));
        assert_eq!(t.gaps, 9000 - 5888);
        // No packet with a length (Vorbis in NUT: 128 or 1024 samples apart): the first
        // spacing is no measure of the others.
        let mut t = StreamTally::new(Role::Audio, Rational::new(1, 48000), Declared::default());
        for pts in [0, 128, 704, 1728, 2752, 3776] {
            t.count(&packet(pts, 0));
        }
        assert_eq!(t.gaps, 0);
    }

    #[test]
    fn a_stream_is_short_only_beyond_one_and_a_half_packets() {
        let mut t = StreamTally::new(Role::Audio, Rational::new(1, 1000), Declared::default());
        t.typical = 20;
        t.end = Some(1000);
        assert_eq!(t.shortfall_s(1.02, 0.0), 0.0);
        assert!((t.shortfall_s(1.5, 0.0) - 0.5).abs() < 1e-9);
        let empty = StreamTally::new(Role::Audio, Rational::new(1, 1000), Declared::default());
        assert!(
            (empty.shortfall_s(2.0, 1.5) - 0.5).abs() < 1e-9,
            "no packet: from the start"
        );
    }
}
