//! A stream whose clock steps back a little into its own last packets, where parts join
//! with their clocks overlapping (`cat a.ts b.ts` where the second part's clock goes on
//! from the first's video while the first's sound ran a packet longer, an AAC encoder's
//! priming before the second's sound, B-frames decoded before the first shown; FFmpeg's
//! concat demuxer writing MPEG-TS). Less than a restart ([`BACKWARDS_US`]) and often in
//! one stream only, so the other streams go on in step. Taken as it is, the packet goes
//! back where no muxer can store it, or two frames share a time: the run was refused as
//! damaged. (A stream that goes back further while another, moved on so already, goes on
//! in step is one too: no restart is confirmed.) The demuxer confirms the step by the stream's next PES going on from the
//! stepped one (after a damaged header it comes back to the old line), and the stream is
//! moved on by the overlap: it plays on from its own last packet, every packet kept.
//! A packet decoded when one of its stream's last ones was, which that one is the start
//! of, is the same packet again, or the whole of one cut short (duplicated data, judged by
//! the integrity checks), no step.
//!
//! [`BACKWARDS_US`]: super::BACKWARDS_US

use std::collections::VecDeque;

use std::hash::{DefaultHasher, Hasher};

use ffmpeg_next::{Packet, Rational};

use super::{OFF_THE_LINE_US, TimestampSplicer};

/// Packets of a stream whose bytes are kept (as hashes) to tell a packet repeated from a
/// new one: more than a PES's frames or a B-frame reordering.
const RECENT_PACKETS: usize = 32;

/// Bytes of a packet's start hashed: two different frames differ well within them
/// (headers, the first coefficients), and hashing every byte of every packet read would
/// cost a pass over the whole file.
const HASHED_BYTES: usize = 4096;

/// Bytes of a packet's start kept as they are (for a packet shorter than one kept).
const PREFIX_BYTES: usize = 64;

/// One packet kept: its decode time on its own clock (microseconds), its length, a hash
/// of its first bytes, its first bytes.
#[derive(Debug, Clone)]
struct Kept {
    decoded_us: Option<i64>,
    len: usize,
    hash: u64,
    prefix: [u8; PREFIX_BYTES],
}

/// The bytes of a stream's last packets.
#[derive(Debug, Clone, Default)]
pub(super) struct Recent(VecDeque<Kept>);

/// A hash of the first [`HASHED_BYTES`] of `data`.
fn hash_of(data: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(&data[..data.len().min(HASHED_BYTES)]);
    h.finish()
}

impl Recent {
    /// Note `packet` (timestamps in `tb`, on its own clock) as the stream's latest.
    pub(super) fn note(&mut self, packet: &Packet, tb: Rational) {
        if self.0.len() == RECENT_PACKETS {
            self.0.pop_front();
        }
        let data = packet.data().unwrap_or_default();
        let mut prefix = [0; PREFIX_BYTES];
        let n = data.len().min(PREFIX_BYTES);
        prefix[..n].copy_from_slice(&data[..n]);
        self.0.push_back(Kept {
            decoded_us: TimestampSplicer::decoded_own_us(packet, tb),
            len: data.len(),
            hash: hash_of(data),
            prefix,
        });
    }

    /// Whether `packet` (timestamps in `tb`) is one of the last packets again, whole or cut
    /// short: decoded at the same time (within a millisecond), and one of them is the start
    /// of it (the same packet, or the first copy of one whose bytes a transport stream
    /// repeats from inside it, cut short where the repeat starts; judged by their first
    /// [`HASHED_BYTES`]), or it is the start of one of them, where it is short enough to
    /// tell. (A part's first frame may begin with the same bytes as the last part's
    /// keyframe: the same parameter sets, a picture repeated; it is decoded at another
    /// time.)
    pub(super) fn holds(&self, packet: &Packet, tb: Rational) -> bool {
        let data = packet.data().unwrap_or_default();
        let decoded = TimestampSplicer::decoded_own_us(packet, tb);
        let same_time = |kept: &Kept| match (kept.decoded_us, decoded) {
            (Some(k), Some(d)) => (k - d).abs() <= 1_000,
            _ => true,
        };
        let mut at_same_time = self.0.iter().filter(|k| same_time(k));
        at_same_time.any(|kept| match kept.len <= data.len() {
            true => hash_of(&data[..kept.len]) == kept.hash,
            false => data.len() <= PREFIX_BYTES && kept.prefix[..data.len()] == *data,
        })
    }
}

impl TimestampSplicer {
    /// How far (microseconds) `packet` (timestamps in `tb`), the start of a PES (it has a
    /// byte position of its own) with a decode time, steps back into its stream's last
    /// packets: decoded no later than the last one (no muxer stores that), by at most
    /// [`OFF_THE_LINE_US`] (a stream moved further would play out of step with the
    /// others), with bytes of its own, where the stream's last PES started in line with
    /// the packets before it (else that PES is the one out of place: a header damaged
    /// late, the stream's first). Measured to where the last packet ends: moved on by
    /// that much, the stream goes on in step. A candidate only, see the module comment;
    /// where all streams go back by more than [`BACKWARDS_US`], a restart, which the
    /// demuxer tries first.
    ///
    /// [`BACKWARDS_US`]: super::BACKWARDS_US
    pub fn steps_back(&self, packet: &Packet, tb: Rational) -> Option<i64> {
        let stream = packet.stream();
        let own_start = packet.position() >= 0 && packet.dts().is_some();
        if !own_start || !self.judges(stream) {
            return None;
        }
        if self.before_reset_shift(packet, tb).is_some() {
            return None;
        }
        let (decoded_us, place) = self.decoded_us(packet, tb)?;
        let last = place.last_decode_us?;
        let in_line = place.last_pes.is_some_and(|(_, in_line)| in_line);
        let fresh = !place.after_reset && place.last_length_us > 0 && in_line;
        let near = decoded_us <= last && decoded_us >= last - OFF_THE_LINE_US;
        if !fresh || !near || self.recent.get(stream)?.holds(packet, tb) {
            return None;
        }
        Some(last + place.last_length_us - decoded_us)
    }

    /// Move stream `index`'s packets from now on by `by_us` (a confirmed step back): its
    /// next packet goes on from its last one.
    pub fn step_on(&mut self, index: usize, by_us: i64) {
        if let Some(place) = self.streams.get_mut(index) {
            place.extra_us += by_us;
        }
    }

    /// Where `own_us` (microseconds on stream `index`'s own clock) lies on the spliced
    /// timeline, seconds.
    pub fn on_timeline_s(&self, index: usize, own_us: i64) -> f64 {
        let extra = self.streams.get(index).map_or(0, |p| p.extra_us);
        (own_us + self.offset_us + extra) as f64 / 1e6
    }

    /// The length of `packet` (in `tb`), microseconds.
    pub fn length_us(packet: &Packet, tb: Rational) -> i64 {
        super::to_us(packet.duration().max(0), tb)
    }
}
