//! Packets an MPEG-TS/PS file holds twice where its bytes show no stretch written twice in
//! a row (`super::repeats`): a segment an HLS downloader fetched again a few segments
//! later, or one written twice in a file whose continuity counters a remux renumbered (no
//! seam in its bytes). Their timestamps go back to where the segment's did, so they were
//! taken for parts joined, and the segment played twice with exit 0. A packet that is one
//! read before again (the same stream, timestamps, length and bytes) starts such a copy,
//! held until the first video or audio packet past it. It is duplicated data, dropped and
//! said (`Demuxer::take_repaired`), where it holds a video frame (sound alone repeats its
//! bytes: silence, a test tone, in parts joined whose clocks overlap), its packets were
//! first read as a stretch of the file's own timeline (each going on from its stream's
//! packet before it, no restart since: not a clip joined in, an advert aired twice), and
//! the file goes on after it from before it (the packet past it continues its stream,
//! which the copy holds too) or ends in it (unless it starts where a part of the file
//! starts: a clip joined again whole, `cat a.ts remuxed-a.ts`). Else the packets are
//! handed out after all: parts joined.

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
/// may start, and still go on from it (a gap in the file's timeline, lost data after the
/// copy, is judged elsewhere): less than a jump forward that restarts the timestamps.
const GOES_ON_US: i64 = 10_000_000;

/// A packet's stream and timestamps, as read (its own clock), its length and the CRC-32
/// of its bytes. (Parts joined may share timestamps, each file's clock starting at 1.4 s:
/// the bytes tell their packets apart.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    stream: usize,
    pts: Option<i64>,
    dts: Option<i64>,
    len: usize,
    crc: u32,
}

/// Where a packet remembered was read: the part of the file (timestamp restarts before
/// it), how many packets of the part were read before it, and whether it went on from its
/// stream's packet before it (a clip joined into a recording does not, where it starts).
#[derive(Debug, Clone, Copy)]
struct Seen {
    part: usize,
    nth: usize,
    in_line: bool,
}

/// Packets at a part's start: a copy the file ends in that starts with one of them is the
/// part's clip joined again (parts joined), not a segment written again.
const PART_START_PACKETS: usize = 8;

/// The packets of one file read so far, and the copy being dropped.
pub(super) struct Replays {
    /// Each packet remembered.
    seen: HashMap<Key, Seen>,
    /// The packet remembered last (the part it starts, where it shows a restart).
    last_noted: Option<Key>,
    /// The part of the file being read: timestamp restarts so far; and the packets of it
    /// remembered.
    part: usize,
    in_part: usize,
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
    /// Whether every packet held was first read in the part the file is in, going on from
    /// its stream's packet before it (a stretch of the file's own timeline).
    this_part: bool,
    /// Where the first packet held was first read.
    first: Option<Seen>,
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
    /// `packet`'s key; `None` without any timestamp (nothing to tell it by).
    fn of(packet: &Packet) -> Option<Self> {
        let (pts, dts) = (packet.pts(), packet.dts());
        let data = packet.data().unwrap_or_default();
        (pts.is_some() || dts.is_some()).then(|| Self {
            stream: packet.stream(),
            pts,
            dts,
            len: data.len(),
            crc: crc32fast::hash(data),
        })
    }
}

impl Replays {
    /// The packets of a file whose streams (video and audio) are `judged`.
    pub(super) fn new(judged: Vec<bool>) -> Self {
        let streams = judged.len();
        Self {
            seen: HashMap::new(),
            last_noted: None,
            part: 0,
            in_part: 0,
            order: VecDeque::new(),
            judged,
            last_kept: vec![None; streams],
            kept_before: 0,
            copy: None,
            streams_holding: vec![false; streams],
        }
    }

    /// Where the packet `key` names was read before, if it was: the same stream,
    /// timestamps, length and bytes.
    fn first_read(&self, key: Option<Key>) -> Option<Seen> {
        self.seen.get(&key?).copied()
    }

    /// The timestamps restarted at the packet remembered last: the file is in part
    /// `part` from it on.
    pub(super) fn on_restart(&mut self, part: usize) {
        self.part = part;
        self.in_part = 1;
        if let Some(seen) = self.last_noted.and_then(|k| self.seen.get_mut(&k)) {
            (seen.part, seen.nth) = (part, 0);
        }
    }

    /// Remember `packet` (timestamps in `tb`; `key` its key), kept.
    fn note(&mut self, packet: &Packet, key: Option<Key>, tb: Option<Rational>) {
        let decoded = tb.and_then(|tb| TimestampSplicer::decoded_own_us(packet, tb));
        let in_line = tb.is_none_or(|tb| self.goes_on(packet, tb))
            || self.last_kept.get(packet.stream()) == Some(&None);
        if let Some(last) = self.last_kept.get_mut(packet.stream()) {
            *last = decoded.or(*last);
        }
        let Some(key) = key else {
            return;
        };
        self.last_noted = Some(key);
        if self.seen.contains_key(&key) {
            return;
        }
        if self.order.len() == KEPT_PACKETS
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        let (part, nth) = (self.part, self.in_part);
        self.seen.insert(key, Seen { part, nth, in_line });
        self.in_part += 1;
        self.order.push_back(key);
    }

    /// Whether `packet` (timestamps in `tb`) goes on from its stream's last packet kept
    /// (before a copy, for the first judged packet past it): later, by at most
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

    /// Hold `packet`, first read where `first` says (where known), the file being in part
    /// `now`.
    fn hold(&mut self, packet: &Packet, first: Option<Seen>, now: usize) {
        self.bytes += packet.size();
        self.packets.push(packet.clone());
        self.this_part &= first.is_none_or(|f| f.part == now && f.in_line);
        self.first = self.first.or(first);
    }

    /// Whether it holds a video frame (of stream `video`) and a packet of `stream`.
    fn holds(&self, video: usize, stream: usize) -> bool {
        let holds = |s: usize| self.packets.iter().any(|p| p.stream() == s);
        holds(video) && holds(stream)
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
        // Its bytes' checksum once: every packet of the file is judged.
        let key = Key::of(packet);
        let first = replays.first_read(key);
        if let Some(from) = replays.copy.as_ref().map(|c| c.from) {
            if (pos < 0 && holding) || (pos >= 0 && first.is_some()) {
                let now = replays.part;
                let copy = replays.copy.as_mut().expect("a copy");
                if copy.full() {
                    return Replayed::GiveBack(replays.give_back(pos + 1));
                }
                copy.hold(packet, first, now);
                if let Some(h) = replays.streams_holding.get_mut(stream) {
                    *h = true;
                }
                return Replayed::Held;
            }
            if pos >= from && replays.judges(stream) {
                let copy = replays.copy.as_ref().expect("a copy");
                let ours = copy.this_part && copy.holds(self.video_index, stream);
                match ours && tb.is_some_and(|tb| replays.goes_on(packet, tb)) {
                    true => self.drop_copy(),
                    false => return Replayed::GiveBack(replays.give_back(pos)),
                }
            }
        }
        let replays = self.replays.as_mut().expect("replays read");
        if pos >= replays.kept_before && replays.judges(stream) && first.is_some() {
            let mut copy = Held {
                from: pos,
                packets: Vec::new(),
                bytes: 0,
                this_part: true,
                first: None,
            };
            copy.hold(packet, first, replays.part);
            replays.copy = Some(copy);
            replays.streams_holding.fill(false);
            replays.streams_holding[stream] = true;
            return Replayed::Held;
        }
        if let Some(h) = replays.streams_holding.get_mut(stream) {
            *h = false;
        }
        replays.note(packet, key, tb);
        Replayed::Kept
    }

    /// The packets held at the file's end: dropped (said) where they are a copy of the
    /// part the file is in, with a video frame, starting after the part's start; else
    /// handed out (parts joined).
    pub(super) fn replays_left_at_end(&mut self) -> Vec<Packet> {
        let Some(replays) = self.replays.as_mut() else {
            return Vec::new();
        };
        let ours = (replays.copy.as_ref()).is_some_and(|c| {
            let inside = c.first.is_some_and(|f| f.nth >= PART_START_PACKETS);
            inside && c.this_part && c.holds(self.video_index, self.video_index)
        });
        if ours {
            self.drop_copy();
            return Vec::new();
        }
        replays.give_back(isize::MAX)
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
            explains_others: false,
        });
    }
}
