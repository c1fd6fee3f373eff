//! Packets an MPEG-TS/PS file holds twice where its bytes show no stretch written twice in
//! a row (`super::repeats`): a segment an HLS downloader fetched again a few segments
//! later, or one written twice in a file whose continuity counters a remux renumbered (no
//! seam in its bytes). Their timestamps go back to where the segment's did, so they were
//! taken for parts joined, and the segment played twice with exit 0. A packet that is one
//! read before again (the same stream, timestamps, length and bytes) starts such a copy
//! where the copy holds video frames (sound alone repeats its bytes: silence, a test tone,
//! in parts joined whose clocks overlap) and the file goes on after the copy from before
//! it: the first video or audio packet past the copy continues its stream, which the copy
//! holds too, from the packets before the copy (a part joined that starts with the same
//! picture at the same times, its sound of its own, does not). The copy is then
//! duplicated data, dropped and said (`Demuxer::take_repaired`).
//! Where the file does not go on so
//! (`cat intro.ts main.ts intro.ts`: the same clip joined twice on purpose, the file ending
//! in it or another part following) the packets are kept, parts joined.

use std::collections::{HashMap, VecDeque};

use ffmpeg_next::{Packet, Rational};

use super::{Demuxer, Repaired};
use crate::splice::TimestampSplicer;

/// Packets remembered (their timestamps, length and a checksum): minutes of a stream, more
/// than the segments a downloader goes back by.
const KEPT_PACKETS: usize = 1 << 16;

/// Packets held, at most, while a copy is read to its end: a few segments of a
/// high-rate stream. A longer one is kept (parts joined).
const HELD_PACKETS: usize = 8192;

/// Bytes held, at most, likewise.
const HELD_BYTES: usize = 256 << 20;

/// How far after its stream's last packet before a copy the first packet past the copy
/// may start, and still go on from it (a gap in the file's timeline is judged elsewhere).
const GOES_ON_US: i64 = 1_000_000;

/// A packet's stream and timestamps, as read (its own clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    stream: usize,
    pts: i64,
    dts: Option<i64>,
}

/// The packets of one file read so far, and the copy being dropped.
pub(super) struct Replays {
    /// Each packet remembered: its length and the CRC-32 of its bytes.
    seen: HashMap<Key, (usize, u32)>,
    /// The order they were remembered in (the oldest forgotten first).
    order: VecDeque<Key>,
    /// The streams judged (video and audio): a copy starts and ends with their packets.
    judged: Vec<bool>,
    /// Each stream's last packet kept: its decode time on its own clock (its presentation
    /// time where it has none), microseconds.
    last_kept: Vec<Option<i64>>,
    /// Packets read again before this byte position were judged parts joined: kept.
    kept_before: isize,
    /// The copy being read, held until its end tells what it is.
    copy: Option<Held>,
    /// Each stream whose last packet was held: the frames FFmpeg split its PES into (no
    /// byte position of their own) go with it.
    streams_holding: Vec<bool>,
}

/// The packets of one copy, held.
struct Held {
    /// The first one's byte position.
    from: isize,
    packets: Vec<Packet>,
    bytes: usize,
}

/// What becomes of a packet read, judged against the packets read before it.
pub(super) enum Replayed {
    /// It is handed out.
    Kept,
    /// It is held, one of a copy of packets read before: dropped where the file goes on
    /// after the copy from before it, else handed out after all.
    Held,
    /// The copy held is parts joined: the packets held are handed out, then this one.
    GiveBack(Vec<Packet>),
}

impl Key {
    /// `packet`'s key; `None` without a presentation time (nothing to tell it by).
    fn of(packet: &Packet) -> Option<Self> {
        Some(Self {
            stream: packet.stream(),
            pts: packet.pts()?,
            dts: packet.dts(),
        })
    }
}

impl Replays {
    /// The packets of a file whose streams (video and audio) are `judged`.
    pub(super) fn new(judged: Vec<bool>) -> Self {
        let streams = judged.len();
        Self {
            seen: HashMap::new(),
            order: VecDeque::new(),
            judged,
            last_kept: vec![None; streams],
            kept_before: 0,
            copy: None,
            streams_holding: vec![false; streams],
        }
    }

    /// Whether `packet` is one read before again: the same stream, timestamps, length and
    /// bytes.
    fn read_before(&self, packet: &Packet) -> bool {
        let Some(key) = Key::of(packet) else {
            return false;
        };
        let data = packet.data().unwrap_or_default();
        self.seen
            .get(&key)
            .is_some_and(|&(len, crc)| len == data.len() && crc == crc32fast::hash(data))
    }

    /// Remember `packet` (timestamps in `tb`), kept.
    fn note(&mut self, packet: &Packet, tb: Option<Rational>) {
        let decoded = tb.and_then(|tb| TimestampSplicer::decoded_own_us(packet, tb));
        if let Some(last) = self.last_kept.get_mut(packet.stream()) {
            *last = decoded.or(*last);
        }
        let Some(key) = Key::of(packet) else {
            return;
        };
        if self.seen.contains_key(&key) {
            return;
        }
        if self.order.len() == KEPT_PACKETS
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        let data = packet.data().unwrap_or_default();
        self.seen.insert(key, (data.len(), crc32fast::hash(data)));
        self.order.push_back(key);
    }

    /// Whether `packet` (timestamps in `tb`), the first judged packet past a copy, goes on
    /// from its stream's last packet kept before the copy: later, by at most
    /// [`GOES_ON_US`].
    fn goes_on(&self, packet: &Packet, tb: Rational) -> bool {
        let (Some(Some(last)), Some(t)) = (
            self.last_kept.get(packet.stream()),
            TimestampSplicer::decoded_own_us(packet, tb),
        ) else {
            return false;
        };
        t > *last && t - last <= GOES_ON_US
    }

    fn judges(&self, stream: usize) -> bool {
        self.judged.get(stream) == Some(&true)
    }
}

impl Held {
    /// Whether it holds as much as a copy may.
    fn full(&self) -> bool {
        self.packets.len() >= HELD_PACKETS || self.bytes >= HELD_BYTES
    }

    fn hold(&mut self, packet: &Packet) {
        self.bytes += packet.size();
        self.packets.push(packet.clone());
    }
}

impl Replays {
    /// The packets held, handed out after all (parts joined): those read again before
    /// `kept_before` are not judged again.
    fn give_back(&mut self, kept_before: isize) -> Vec<Packet> {
        self.kept_before = self.kept_before.max(kept_before);
        self.streams_holding.fill(false);
        self.copy.take().map(|h| h.packets).unwrap_or_default()
    }
}

impl Demuxer {
    /// What becomes of `packet` (see the module comment): held where it is one read before
    /// again and starts or goes on with a copy; the first video or audio packet past the
    /// copy decides whether the copy is dropped (said) or handed out after all.
    pub(super) fn judge_replayed(&mut self, packet: &Packet) -> Replayed {
        if self.sought {
            return Replayed::Kept;
        }
        let Some(replays) = self.replays.as_mut() else {
            return Replayed::Kept;
        };
        let (stream, pos) = (packet.stream(), packet.position());
        let tb = self.time_bases.get(stream).copied();
        let holding = replays.streams_holding.get(stream) == Some(&true);
        if let Some(from) = replays.copy.as_ref().map(|c| c.from) {
            if (pos < 0 && holding) || (pos >= 0 && replays.read_before(packet)) {
                let copy = replays.copy.as_mut().expect("a copy");
                if copy.full() {
                    return Replayed::GiveBack(replays.give_back(pos + 1));
                }
                copy.hold(packet);
                if let Some(h) = replays.streams_holding.get_mut(stream) {
                    *h = true;
                }
                return Replayed::Held;
            }
            if pos >= from && replays.judges(stream) {
                let held = &replays.copy.as_ref().expect("a copy").packets;
                let frames = held.iter().any(|p| p.stream() == self.video_index);
                let own = held.iter().any(|p| p.stream() == stream);
                match frames && own && tb.is_some_and(|tb| replays.goes_on(packet, tb)) {
                    true => self.drop_copy(),
                    false => return Replayed::GiveBack(replays.give_back(pos)),
                }
            }
        }
        let replays = self.replays.as_mut().expect("replays read");
        if pos >= replays.kept_before && replays.judges(stream) && replays.read_before(packet) {
            let mut copy = Held {
                from: pos,
                packets: Vec::new(),
                bytes: 0,
            };
            copy.hold(packet);
            replays.copy = Some(copy);
            replays.streams_holding.fill(false);
            replays.streams_holding[stream] = true;
            return Replayed::Held;
        }
        if let Some(h) = replays.streams_holding.get_mut(stream) {
            *h = false;
        }
        replays.note(packet, tb);
        Replayed::Kept
    }

    /// The packets held at the file's end, handed out (the file ends in the copy: parts
    /// joined).
    pub(super) fn replays_left_at_end(&mut self) -> Vec<Packet> {
        self.replays
            .as_mut()
            .map(|r| r.give_back(isize::MAX))
            .unwrap_or_default()
    }

    /// Drop the copy held, the file going on after it from before it, and say it.
    fn drop_copy(&mut self) {
        let Some(replays) = self.replays.as_mut() else {
            return;
        };
        replays.streams_holding.fill(false);
        let Some(copy) = replays.copy.take() else {
            return;
        };
        let first = copy.packets.first();
        let tb = first.and_then(|p| self.time_bases.get(p.stream()).copied());
        let at_us = first
            .zip(tb)
            .and_then(|(p, tb)| TimestampSplicer::decoded_own_us(p, tb));
        let at = at_us.unwrap_or(0) as f64 / 1e6;
        let video = copy
            .packets
            .iter()
            .filter(|p| p.stream() == self.video_index);
        let frames = video.count() as u64;
        let others = copy.packets.len() as u64 - frames;
        self.repaired.push(Repaired {
            text: format!(
                "the input repeats itself: from byte {} (from {at:.3} s on its own clock) it holds packets read before again, the same timestamps and bytes, and goes on after them from before them (a segment written again later, or with its continuity counters renumbered): the copy's {frames} frame(s) and {others} other packet(s) are duplicated data, dropped",
                copy.from
            ),
            frames_dropped: frames,
            packets_dropped: others,
        });
    }
}
