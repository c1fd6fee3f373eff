//! `TimestampSplicer`: continues the timeline where the timestamps of a transport or program
//! stream restart (`cat a.ts b.ts`, a broadcast capture across a splice). Such formats carry no
//! promise that timestamps keep increasing; where they jump back by more than a few frames
//! ([`BACKWARDS_US`]) or forward by more than ten seconds, every stream's later timestamps are
//! moved so the file plays on from where it was, and the reset is counted. Every frame and
//! packet is kept. (One packet whose timestamp is damaged jumps too: the demuxer asks the next
//! packets first.) A packet read from before the byte where the reset showed that goes on in
//! step with its stream belongs to the part before it, though FFmpeg hands it out later (a PES
//! is complete only when the next one of its PID starts): it keeps that part's shift. The next
//! part starts where its earliest stream does (the demuxer looks ahead for it), so each stream
//! keeps its place in it.

use ffmpeg_next::{Packet, Rational};

/// A backwards jump of decode times longer than this (microseconds) is a candidate reset:
/// past a muxer's rounding ([`IN_STEP_US`]), which decode times never go back by within one
/// part. Confirmed only where the other streams go back too (one damaged PES header moves
/// its own stream alone): parts joined with their times overlapping by a fraction of a
/// second are a restart as much as those a minute apart.
const BACKWARDS_US: i64 = 150_000;
/// How long (microseconds) after its decode time a frame may be shown: more than any
/// reordering holds one back.
const REORDER_MAX_US: i64 = 1_000_000;
/// How far (microseconds) behind every other stream a packet is off the whole file's line:
/// more than a muxer interleaves streams by (an MPEG-TS audio PES is written up to half a
/// second ahead of the picture it plays with).
pub(crate) const OFF_THE_LINE_US: i64 = 1_000_000;
/// A forward jump longer than this (microseconds) is a reset too (FFmpeg's own threshold).
const FORWARDS_US: i64 = 10_000_000;
/// How far (microseconds) a packet's decode time may fall behind its stream's last one and
/// still continue it (rounding of a muxer's clock).
const IN_STEP_US: i64 = 100_000;

/// One stream's place on the spliced timeline.
#[derive(Debug, Clone, Copy, Default)]
struct StreamPlace {
    /// Where its last packet ended, on the spliced timeline (microseconds).
    end_us: Option<i64>,
    /// The same, a packet shown long after it is decoded ending where it is decoded: where
    /// the part after it may start (a damaged presentation time of the part's last frame,
    /// 186 s ahead, placed the next part after it: a 186 s hole).
    end_in_step_us: Option<i64>,
    /// Its last packet's decode time (its presentation time where it has none), on the
    /// spliced timeline (microseconds).
    last_decode_us: Option<i64>,
    /// Extra shift of this stream after a reset, so its first packet does not overlap its
    /// last one (microseconds).
    extra_us: i64,
    /// Whether its next packet is its first since the last reset.
    after_reset: bool,
    /// Its extra shift before the last reset, for the last packets of the part before.
    extra_before_us: i64,
    /// How long its last packet lasts (microseconds; 0 where unknown).
    last_length_us: i64,
    /// The byte position of its last PES (the last packet with a position of its own), and
    /// whether that started where the packets before it ended: a PES out of line (one whose
    /// header is damaged, the stream's first) may be what the next one steps back into.
    last_pes: Option<(i64, bool)>,
    /// How long (microseconds) the part's frames are shown after they are decoded, at most
    /// (its B-frame reordering), and how many frames told it (`held_beyond_reorder`).
    reorder_us: i64,
    reordered: u32,
}

/// Frames of a part with both timestamps that tell its reordering before a frame shown
/// beyond it is judged (x264 and x265 reach their deepest within a group of pictures).
const REORDER_FRAMES: u32 = 16;

/// Where the timestamps of one input restart, and the shift that continues them.
#[derive(Debug, Clone)]
pub struct TimestampSplicer {
    enabled: bool,
    offset_us: i64,
    /// The shift before the last reset, and the byte position of the packet that showed it.
    before_reset: Option<(i64, i64)>,
    /// How long before the packet that shows the next reset its part starts (another
    /// stream's first packet of it, read later, is shown earlier), microseconds.
    next_part_lead_us: i64,
    /// The presentation time the packet that shows the next reset is placed by, where its
    /// own is damaged (microseconds on its own clock).
    next_reset_shown_us: Option<i64>,
    streams: Vec<StreamPlace>,
    /// Which streams' timestamps can reveal a reset (video, audio, subtitles: not data
    /// streams, whose timestamps follow their own rules).
    watched: Vec<bool>,
    /// The first bytes of each stream's last packets (`step_back::Recent`).
    recent: Vec<step_back::Recent>,
}

fn to_us(t: i64, tb: Rational) -> i64 {
    let (num, den) = (
        i128::from(tb.numerator()),
        i128::from(tb.denominator().max(1)),
    );
    (i128::from(t) * num * 1_000_000 / den) as i64
}

fn from_us(us: i64, tb: Rational) -> i64 {
    let (num, den) = (
        i128::from(tb.numerator().max(1)),
        i128::from(tb.denominator()),
    );
    (i128::from(us) * den / (num * 1_000_000)) as i64
}

impl TimestampSplicer {
    /// A splicer for an input whose streams are `watched` or not (see the field); `enabled`
    /// for formats whose timestamps may restart (FFmpeg's AVFMT_TS_DISCONT: MPEG-TS and
    /// MPEG-PS), else it changes nothing.
    pub fn new(watched: Vec<bool>, enabled: bool) -> Self {
        Self {
            enabled,
            offset_us: 0,
            before_reset: None,
            next_part_lead_us: 0,
            next_reset_shown_us: None,
            streams: vec![StreamPlace::default(); watched.len()],
            recent: vec![step_back::Recent::default(); watched.len()],
            watched,
        }
    }

    /// The latest of `end` over the watched streams' places.
    fn latest_end_us(&self, end: impl Fn(&StreamPlace) -> Option<i64>) -> Option<i64> {
        (self.streams.iter().zip(&self.watched))
            .filter(|(_, w)| **w)
            .filter_map(|(s, _)| end(s))
            .max()
    }

    /// Where the part after the packets placed so far may start: where the last of the
    /// watched streams ends (`StreamPlace::end_in_step_us`), microseconds.
    fn part_end_us(&self) -> Option<i64> {
        self.latest_end_us(|s| s.end_in_step_us)
    }

    fn file_end_us(&self) -> Option<i64> {
        self.latest_end_us(|s| s.end_us)
    }

    /// A new part begins with the next packets: each stream starts it without an extra
    /// shift of its own (the part before's kept for its last packets, handed out later).
    fn begin_part(&mut self) {
        for s in &mut self.streams {
            s.extra_before_us = s.extra_us;
            s.extra_us = 0;
            s.after_reset = true;
            (s.reorder_us, s.reordered) = (0, 0);
        }
    }

    /// Whether `packet` (timestamps in `tb`) shows a restart: its decode time far behind
    /// its stream's last one, or far past the whole file's end. A candidate only: one
    /// packet whose timestamp is damaged shows one too (the caller tells them apart).
    pub fn shows_reset(&self, packet: &Packet, tb: Rational) -> bool {
        let Some((decoded_us, place)) = self.decoded_us(packet, tb).filter(|_| self.enabled) else {
            return false;
        };
        if self.before_reset_shift(packet, tb).is_some() {
            return false;
        }
        // A stream's first packet shows nothing: the muxer may have written another stream a
        // second or more ahead of it (an encoder's lookahead), or it may start later.
        match (
            self.watched[packet.stream()],
            self.file_end_us(),
            place.last_decode_us,
        ) {
            (true, Some(file_end), Some(stream_last)) => {
                decoded_us < stream_last - BACKWARDS_US || decoded_us > file_end + FORWARDS_US
            }
            _ => false,
        }
    }

    /// Where `packet` (timestamps in `tb`) is one of the last of the part before the latest
    /// reset, the shift of that part (microseconds): its stream has none of the new part
    /// yet, it was read from before the byte that showed the reset (or has no byte position
    /// of its own: a frame a parser held back until the next PES of its PID, AC-3's last),
    /// and by that part's shift it goes on in step with its stream's last packet. (The next
    /// part's first packet of another stream may come before the one that showed the reset
    /// too, handed out later: it is not in step.)
    fn before_reset_shift(&self, packet: &Packet, tb: Rational) -> Option<i64> {
        let (offset, reset_pos) = self.before_reset?;
        let place = self.streams.get(packet.stream())?;
        let shift = offset + place.extra_before_us;
        let read_before = (packet.position() as i64) < reset_pos;
        (place.after_reset && read_before && place.in_step(packet, tb, shift)).then_some(shift)
    }

    /// `packet`'s decode time (its presentation time where it has none) on the spliced
    /// timeline so far (microseconds), and its stream's place. Decode times show a
    /// restart: they only go forward within one part, where presentation times go back by
    /// as much as a B-frame waits for its later reference (a second or more across a pause
    /// in a variable-rate recording).
    fn decoded_us(&self, packet: &Packet, tb: Rational) -> Option<(i64, StreamPlace)> {
        let decoded = packet.dts().or(packet.pts())?;
        let place = *self.streams.get(packet.stream())?;
        Some((to_us(decoded, tb) + self.offset_us + place.extra_us, place))
    }

    /// Whether `packet` (timestamps in `tb`) continues its stream in step: decoded no
    /// earlier than its stream's last packet (decode times only go forward within one
    /// part; a tenth of a second of rounding allowed) nor far past the whole file's end.
    /// A stream that does not, next to another's restart, confirms it: across a join, one
    /// stream may go back by less than a restart does (a part whose video starts after
    /// its sound).
    pub fn continues(&self, packet: &Packet, tb: Rational) -> bool {
        let Some((decoded_us, place)) = self.decoded_us(packet, tb) else {
            return true;
        };
        match (place.last_decode_us, self.file_end_us()) {
            (Some(last), Some(file_end)) => {
                decoded_us >= last - IN_STEP_US && decoded_us <= file_end + FORWARDS_US
            }
            _ => true,
        }
    }

    /// Whether `packet` (timestamps in `tb`) is decoded more than [`OFF_THE_LINE_US`] behind
    /// every other watched stream's last packet: off the whole file's line, not just its
    /// own stream's (that stream's last packets may be the ones out of place, a PES whose
    /// header leapt ahead, placed since it showed no restart).
    pub fn behind_the_others(&self, packet: &Packet, tb: Rational) -> bool {
        let Some((decoded_us, _)) = self.decoded_us(packet, tb) else {
            return false;
        };
        let others_last = self
            .streams
            .iter()
            .zip(&self.watched)
            .enumerate()
            .filter(|&(i, (_, w))| *w && i != packet.stream())
            .filter_map(|(_, (s, _))| s.last_decode_us)
            .max();
        others_last.is_some_and(|last| decoded_us < last - OFF_THE_LINE_US)
    }

    /// Whether `packet` (timestamps in `tb`) is its stream's first of the part that began
    /// at the latest reset, and decoded more than a restart ([`BACKWARDS_US`]) behind the stream's
    /// last packet even so: that stream's timestamps restart after another's did, by more
    /// (the part's sound starts seconds before its picture), and it catches up with the same
    /// splice. A stream that has packets of the new part already, or one leaping ahead,
    /// shows a restart of its own, to be confirmed (a damaged PES header after a join).
    pub fn catches_up(&self, packet: &Packet, tb: Rational) -> bool {
        let Some((decoded_us, place)) = self.decoded_us(packet, tb).filter(|_| self.enabled) else {
            return false;
        };
        let behind = place
            .last_decode_us
            .is_some_and(|last| decoded_us < last - BACKWARDS_US);
        place.after_reset && behind && self.before_reset_shift(packet, tb).is_none()
    }

    /// Whether `packet` (timestamps in `tb`) is decoded more than [`OFF_THE_LINE_US`] past
    /// its own stream's last packet (where it has one) and past every other watched
    /// stream's (at least one): a candidate for a damaged timestamp, confirmed by its
    /// stream's next packet coming back ([`TimestampSplicer::comes_back_from`]). A pause of
    /// the whole recording leaps too, and its stream's next packet goes on from it.
    pub fn leaps_ahead(&self, packet: &Packet, tb: Rational) -> bool {
        let Some((decoded_us, place)) = self.decoded_us(packet, tb).filter(|_| self.enabled) else {
            return false;
        };
        // One of the last packets of the part before a restart, handed out after it.
        if self.before_reset_shift(packet, tb).is_some() {
            return false;
        }
        let past = |last: i64| decoded_us > last + OFF_THE_LINE_US;
        let others: Vec<i64> = (self.streams.iter().zip(&self.watched).enumerate())
            .filter(|&(i, (_, w))| *w && i != packet.stream())
            .filter_map(|(_, (s, _))| s.last_decode_us)
            .collect();
        self.watched[packet.stream()]
            && place.last_decode_us.is_none_or(past)
            && !others.is_empty()
            && others.into_iter().all(past)
    }

    /// Whether `next`, the next packet of `leapt`'s stream (both in `tb`), is decoded more
    /// than [`OFF_THE_LINE_US`] before `leapt`: the stream came back from its leap.
    pub fn comes_back_from(next: &Packet, leapt: &Packet, tb: Rational) -> bool {
        let decoded = |p: &Packet| p.dts().or(p.pts()).map(|t| to_us(t, tb));
        match (decoded(next), decoded(leapt)) {
            (Some(n), Some(l)) => n < l - OFF_THE_LINE_US,
            _ => false,
        }
    }

    /// Whether stream `index` can show a restart: watched, with a packet placed already.
    pub fn judges(&self, index: usize) -> bool {
        let placed = self
            .streams
            .get(index)
            .is_some_and(|p| p.last_decode_us.is_some());
        self.enabled && placed && self.watched.get(index) == Some(&true)
    }

    /// Move `packet`'s timestamps (in `tb`) by the splice so far, leaving its stream's place
    /// as it was: a packet whose restart was not confirmed (its timestamp is damaged, which
    /// the integrity checks judge).
    pub fn shift_only(&self, packet: &mut Packet, tb: Rational) {
        let extra = self.streams.get(packet.stream()).map_or(0, |p| p.extra_us);
        if self.enabled {
            shift_packet(packet, self.offset_us + extra, tb);
        }
    }

    /// The packet placed next shows a reset, and its part starts `lead_us` before it (the
    /// part's sound starts a little before its picture, but its PES comes later in the
    /// file): the part is placed so that its start, not that packet, continues the file.
    /// `shown_us` is that packet's presentation time on its own clock where its own is
    /// damaged (`Demuxer::restart_shown_us`), the place its frame belongs.
    pub fn lead_next_reset(&mut self, lead_us: i64, shown_us: Option<i64>) {
        self.next_part_lead_us = lead_us.clamp(0, FORWARDS_US);
        self.next_reset_shown_us = shown_us;
    }

    /// The presentation time of `packet` (in `tb`) on its own clock, microseconds.
    pub fn shown_us(packet: &Packet, tb: Rational) -> Option<i64> {
        packet.pts().or(packet.dts()).map(|t| to_us(t, tb))
    }

    /// The decode time of `packet` (in `tb`) on its own clock, microseconds (its
    /// presentation time where it has none).
    pub fn decoded_own_us(packet: &Packet, tb: Rational) -> Option<i64> {
        packet.dts().or(packet.pts()).map(|t| to_us(t, tb))
    }

    /// The presentation time of `packet` (in `tb`) on its own clock, microseconds, where it
    /// can be right: not before its decode time (a tick of rounding aside) nor more than a
    /// second after it (no reordering holds a frame back so long). `None` for a
    /// packet shown before it is decoded or long after: its presentation time is damaged
    /// (a flipped bit in a PES header), and a part placed by it would start seconds off.
    pub fn shown_in_step_us(packet: &Packet, tb: Rational) -> Option<i64> {
        let shown = Self::shown_us(packet, tb)?;
        match packet.dts().map(|d| to_us(d, tb)) {
            Some(decoded) if shown < decoded - 2_000 || shown > decoded + REORDER_MAX_US => None,
            _ => Some(shown),
        }
    }

    /// Move `packet`'s timestamps (in `tb`) onto the spliced timeline; where this packet
    /// shows a reset, where the timeline was when it happened (seconds).
    pub fn place(&mut self, packet: &mut Packet, tb: Rational) -> Option<f64> {
        if !self.enabled {
            return None;
        }
        // Presentation times: where one part ends and the next begins on screen (decode
        // times of B-frame video run ahead of them).
        let at = packet.pts().or(packet.dts())?;
        let index = packet.stream();
        if let Some(recent) = self.recent.get_mut(index) {
            recent.note(packet, tb);
        }
        if let Some(shift) = self.before_reset_shift(packet, tb) {
            shift_packet(packet, shift, tb);
            self.streams[index].advance(packet, at, tb);
            return None;
        }
        let place = *self.streams.get(index)?;
        let mut reset = None;
        let mut shift = self.offset_us + place.extra_us;
        let mut own_us = to_us(at, tb);
        if self.shows_reset(packet, tb)
            && let Some(file_end) = self.part_end_us()
        {
            own_us = self.next_reset_shown_us.take().unwrap_or(own_us);
            let at_us = own_us + shift;
            // The timestamps restart: continue from where the whole file had got to.
            reset = Some(file_end as f64 / 1e6);
            let pos = packet.position() as i64;
            self.before_reset = (pos >= 0).then_some((self.offset_us, pos));
            // The part starts where its earliest stream does: each stream keeps its place in
            // it.
            self.offset_us += file_end - at_us + std::mem::take(&mut self.next_part_lead_us);
            self.begin_part();
            shift = self.offset_us;
        }
        let place = &mut self.streams[index];
        if place.after_reset {
            place.after_reset = false;
            let at_us = own_us + shift;
            if let Some(end) = place.end_in_step_us.filter(|&end| at_us < end) {
                // This stream started the new part a little earlier than the one that
                // showed the reset: keep it after its own last packet.
                place.extra_us = end - at_us;
                shift += place.extra_us;
            }
        }
        shift_packet(packet, shift, tb);
        place.advance(packet, at, tb);
        reset
    }
}

impl StreamPlace {
    /// Whether `packet` (timestamps in `tb`), moved by `shift_us`, is decoded where this
    /// stream's last packet ended, give or take [`IN_STEP_US`].
    fn in_step(&self, packet: &Packet, tb: Rational, shift_us: i64) -> bool {
        let Some(decoded) = packet.dts().or(packet.pts()) else {
            return false;
        };
        let decoded_us = to_us(decoded, tb) + shift_us;
        match (self.last_decode_us, self.end_us) {
            (Some(last), Some(end)) => {
                decoded_us >= last - IN_STEP_US && decoded_us <= end.max(last) + IN_STEP_US
            }
            _ => false,
        }
    }

    /// Whether `packet` (timestamps in `tb`), a frame of a part whose reordering is known,
    /// is shown later after it is decoded than the part's frames are, by more than a frame
    /// and a half: its presentation time is damaged (the part's last frame, its time 0.18 s
    /// late, placed the part after it that much late: a hole in the picture and the sound,
    /// exit 0 with an audio-gap warning). For the part after it, it ends a frame after the
    /// frames before it (where a part's last frame is shown), and the frames that follow
    /// show it out of line. Else the reordering learns from it.
    fn held_beyond_reorder(&mut self, packet: &Packet, tb: Rational) -> bool {
        let (Some(pts), Some(dts)) = (packet.pts(), packet.dts()) else {
            return false;
        };
        let (held, length) = (to_us(pts - dts, tb), to_us(packet.duration(), tb));
        if self.reordered >= REORDER_FRAMES && length > 0 && held > self.reorder_us + 3 * length / 2
        {
            return true;
        }
        self.reorder_us = self.reorder_us.max(held);
        self.reordered += 1;
        false
    }

    /// Note `packet` (placed already; `at` its presentation time before) as the stream's
    /// latest.
    fn advance(&mut self, packet: &Packet, at: i64, tb: Rational) {
        let start = packet.pts().or(packet.dts()).unwrap_or(at);
        let length = packet.duration().max(0);
        let shown_end_us = to_us(start + length, tb);
        self.end_us = Some(self.end_us.map_or(shown_end_us, |e| e.max(shown_end_us)));
        // A packet shown long after it is decoded (a frame held across a pause, or one
        // whose presentation time is damaged) ends, for the part after it, where it is
        // decoded.
        let end_us = match TimestampSplicer::shown_in_step_us(packet, tb) {
            Some(_) => match (self.held_beyond_reorder(packet, tb), self.end_in_step_us) {
                (true, Some(end)) => end + to_us(length, tb),
                _ => shown_end_us,
            },
            None => to_us(packet.dts().unwrap_or(start) + length, tb),
        };
        self.end_in_step_us = Some(self.end_in_step_us.map_or(end_us, |e| e.max(end_us)));
        let decoded_us = to_us(packet.dts().unwrap_or(start), tb);
        let pos = packet.position() as i64;
        if pos >= 0 && self.last_pes.is_none_or(|(last, _)| last != pos) {
            let len = self.last_length_us;
            let in_line = (self.last_decode_us)
                .is_some_and(|last| TimestampSplicer::in_line(decoded_us - (last + len), len));
            self.last_pes = Some((pos, in_line));
        }
        self.last_decode_us = Some(decoded_us);
        self.last_length_us = to_us(length, tb);
    }
}

/// Move `packet`'s timestamps (in `tb`) by `shift_us` microseconds.
fn shift_packet(packet: &mut Packet, shift_us: i64, tb: Rational) {
    if shift_us != 0 {
        let by = from_us(shift_us, tb);
        packet.set_pts(packet.pts().map(|t| t + by));
        packet.set_dts(packet.dts().map(|t| t + by));
    }
}

mod seam;
mod step_back;
#[cfg(test)]
mod tests;
