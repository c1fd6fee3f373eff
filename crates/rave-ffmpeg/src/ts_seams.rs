//! `TsSeams`: where a new transport stream starts inside an MPEG-TS file, found from its
//! bytes ahead of the packets FFmpeg hands out. `cat a.ts b.ts` joins two streams whose
//! muxers each started every PID's 4-bit continuity counter at 0: at the seam the PAT's
//! (PID 0) counter and another PID's break to 0 within a few transport packets of each
//! other (the next stream's tables, SDT, PAT, PMT, then its first PES). The demuxer places
//! the part that starts there as a whole (`Demuxer::next_packet`): where its clock
//! overlaps the part before a little, each stream's picture-to-sound offset is kept.
//! A counter of 15 going on to 0 is no break (one join in sixteen shows no seam, and is
//! judged by its timestamps alone); a counter 0 again, far from the packet before, is one
//! (a stream that sends its tables once, as FFmpeg's segment muxer copying does).

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::fresh_tables::FreshTables;
pub use crate::ts_fragments::Joined;
use crate::ts_fragments::TsFragments;
use crate::ts_packet;
pub use crate::ts_stream_types::CodecChange;
use crate::ts_stream_types::TsStreamTypes;

/// Bytes of one transport packet.
const PACKET: u64 = 188;
/// Transport packets within which a first table's break to 0 and another PID's make a new
/// stream's start (its muxer writes its tables one after another).
const FRESH_TABLES_PACKETS: u64 = 16;
/// The PID of stuffing packets, whose counter means nothing.
const NULL_PID: u16 = 0x1FFF;
/// Bytes read from the file at a time.
const CHUNK: usize = 1 << 20;
/// Bytes behind the scan past which a counter break is forgotten: the scan runs ahead of
/// the reading by up to a repeat's length (`ts_repeats::MAX_REPEAT_BYTES`), and a break is
/// asked about within a few MB of the reading (`TsSeams::break_near`). A stream whose
/// counters break at every packet holds no more than this many bytes' worth.
const BREAKS_KEPT_BYTES: u64 = 512 << 20;
const _: () = assert!(BREAKS_KEPT_BYTES > crate::ts_repeats::MAX_REPEAT_BYTES + (16 << 20));

/// Bytes from a part's last PAT to the next part's tables at most, where the next part's
/// counter breaks before them are taken for its join (`TsSeams::first_break_before`).
const BREAK_RUN_SPAN: u64 = 4 << 20;

/// The seams of one MPEG-TS file, scanned from its start as far as asked.
pub struct TsSeams {
    file: File,
    /// Bytes read and not yet looked at all, from byte `buf_start` of the file on.
    buf: Vec<u8>,
    buf_start: u64,
    /// The byte offset of the next transport packet to look at.
    scanned: u64,
    /// Whether the file's end (or an unreadable byte) was reached.
    done: bool,
    /// Each PID's last continuity counter, and where its packet was.
    counters: HashMap<u16, (u8, u64)>,
    /// The signs of a new stream's first tables (byte positions).
    fresh: FreshTables,
    /// Seams found and not yet taken, in byte order.
    found: VecDeque<u64>,
    /// Where a PID's counter broke lately (not going on by one, nor the same packet sent
    /// twice), in byte order: a capture joined on, cut anywhere, breaks every PID's there.
    breaks: VecDeque<u64>,
    /// Where a part joined on starts inside a PES (`seam_fragment`).
    fragments: TsFragments,
    /// Where the PAT's last two packets were (the earlier, the later).
    pats: (Option<u64>, Option<u64>),
    /// The codec each PID is declared with, and where one changes.
    stream_types: TsStreamTypes,
}

impl TsSeams {
    /// A scanner of the file at `path`, where it is made of 188-byte transport packets
    /// (a sync byte at its start and 188 bytes on); `None` otherwise, or where it cannot
    /// be opened.
    pub fn open(path: &Path) -> Option<Self> {
        let mut file = File::open(path).ok()?;
        let mut head = [0u8; PACKET as usize + 1];
        file.read_exact(&mut head).ok()?;
        if head[0] != 0x47 || head[PACKET as usize] != 0x47 {
            return None;
        }
        Some(Self {
            file: File::open(path).ok()?,
            buf: Vec::new(),
            buf_start: 0,
            scanned: 0,
            done: false,
            counters: HashMap::new(),
            fresh: FreshTables::new(PACKET * FRESH_TABLES_PACKETS),
            found: VecDeque::new(),
            breaks: VecDeque::new(),
            fragments: TsFragments::default(),
            pats: (None, None),
            stream_types: TsStreamTypes::default(),
        })
    }

    /// Whether a PID's counter broke within `within` bytes of byte `pos`, before or after
    /// it (scanning the file that far: a capture cut inside its picture's PES may go on
    /// with the video's counter by chance, its tables' and sound's breaking a little
    /// later); breaks further back are forgotten.
    pub fn break_near(&mut self, pos: u64, within: u64) -> bool {
        let to = pos + within;
        self.scan_to(to);
        let from = pos.saturating_sub(within);
        while self.breaks.front().is_some_and(|&b| b < from) {
            self.breaks.pop_front();
        }
        self.breaks.iter().any(|&b| b <= to)
    }

    /// Where a part joined on starts inside a PES of `pid` (a transport packet that starts
    /// none, its payload the rest of a PES the file does not hold), right after the PID's
    /// PES that starts at byte `pes` (`TsFragments::after`), scanning the file to `to`.
    pub fn fragment_after(&mut self, pid: u16, pes: u64, to: u64) -> Option<(u64, Joined)> {
        self.scan_to(to);
        self.fragments.after(pid, pes)
    }

    /// The PIDs whose declared codec changed in the file (`TsStreamTypes`), scanning it to
    /// its end; each said once.
    pub fn codec_changes_to_end(&mut self) -> Vec<CodecChange> {
        self.scan_to(u64::MAX);
        self.stream_types.take_changes()
    }

    /// The last seam at or before byte `pos` not taken yet (those before it are taken
    /// too: a packet after them was handed out first), scanning the file that far.
    pub fn take_up_to(&mut self, pos: u64) -> Option<u64> {
        self.scan_to(pos + PACKET * FRESH_TABLES_PACKETS);
        let mut last = None;
        while self.found.front().is_some_and(|&s| s <= pos) {
            last = self.found.pop_front();
        }
        last
    }

    /// The first seam after byte `after` (not taken yet), scanning the file as far as
    /// `limit` bytes past it for one.
    pub fn next_after(&mut self, after: u64, limit: u64) -> Option<u64> {
        loop {
            if let Some(&s) = self.found.iter().find(|&&s| s > after) {
                return Some(s);
            }
            if self.done || self.scanned > after + limit {
                return None;
            }
            self.scan_chunk(self.scanned + CHUNK as u64);
        }
    }

    /// Scan the file as far as byte `to` (or its end).
    fn scan_to(&mut self, to: u64) {
        while !self.done && self.scanned <= to {
            self.scan_chunk(to);
        }
    }

    /// Look at the transport packets' headers from `scanned` on, as far as `far` or the
    /// bytes read (reading more where fewer than a packet are left); a packet that does
    /// not start with the sync byte is damage, and the next sync byte is looked for.
    fn scan_chunk(&mut self, far: u64) {
        let mut i = (self.scanned - self.buf_start) as usize;
        if self.buf.len() < i + PACKET as usize {
            self.buf.drain(..i.min(self.buf.len()));
            self.buf_start = self.scanned;
            let old = self.buf.len();
            self.buf.resize(old + CHUNK, 0);
            let read = self.file.read(&mut self.buf[old..]).unwrap_or(0);
            self.buf.truncate(old + read);
            if read == 0 {
                self.done = true;
                return;
            }
            i = 0;
        }
        while i + PACKET as usize <= self.buf.len() && self.buf_start + i as u64 <= far {
            if self.buf[i] != 0x47 {
                i += 1;
                continue;
            }
            let header = [self.buf[i + 1], self.buf[i + 2], self.buf[i + 3]];
            let p = &self.buf[i..i + PACKET as usize];
            if self.stream_types.wants(ts_packet::pid(p[1], p[2])) {
                self.stream_types.on_packet(self.buf_start + i as u64, p);
            }
            let mut sig = [0u8; 16];
            sig[..8].copy_from_slice(&p[4..12]);
            sig[8..].copy_from_slice(&p[180..]);
            self.on_header(self.buf_start + i as u64, header, sig);
            i += PACKET as usize;
        }
        self.scanned = self.buf_start + i as u64;
    }

    /// A transport packet at byte `at` whose header bytes after the sync byte are `h`, and
    /// `sig` some of its other bytes (a packet sent twice has the same).
    fn on_header(&mut self, at: u64, h: [u8; 3], sig: [u8; 16]) {
        let pid = ts_packet::pid(h[0], h[1]);
        let (has_payload, counter) = (h[2] & 0x10 != 0, h[2] & 0x0F);
        if pid == NULL_PID || !has_payload {
            return;
        }
        let last = self.counters.insert(pid, (counter, at));
        if pid == 0 {
            self.pats = (self.pats.1, Some(at));
        }
        let broke = last.is_some_and(|(last, _)| counter != (last + 1) % 16 && counter != last);
        let again = last.is_some_and(|(last, _)| counter == last);
        self.fragments
            .on_packet(pid, at, h[0] & 0x40 != 0, (broke, again), sig);
        if broke {
            let old = at.saturating_sub(BREAKS_KEPT_BYTES);
            while self.breaks.front().is_some_and(|&b| b < old) {
                self.breaks.pop_front();
            }
            self.breaks.push_back(at);
        }
        let (Some((last, last_at)), 0) = (last, counter) else {
            return;
        };
        // The same counter again is a packet sent twice, right after the first; far from
        // it, a stream that sends that table once (FFmpeg's segment muxer, copying, writes
        // one PAT and one SDT to a segment): the next stream's is 0 again.
        let sent_twice = at - last_at <= PACKET * FRESH_TABLES_PACKETS;
        match last {
            15 => return,
            0 if sent_twice => return,
            _ => {}
        }
        if let Some(start) = self.fresh.broke_to_zero(at, u32::from(pid)) {
            let start = self.first_break_before(start);
            self.found.push_back(start);
        }
    }

    /// Where a new stream whose tables start at `start` joins on: a capture cut from any
    /// byte breaks its picture's and sound's counters at the join, before its first tables
    /// (whose counters came to 0 by chance); the first counter break after the part
    /// before's last PAT is the join.
    fn first_break_before(&self, start: u64) -> u64 {
        let pat_before = match self.pats {
            (_, Some(last)) if last < start => Some(last),
            (before, _) => before,
        };
        let Some(pat) = pat_before.filter(|&p| start - p <= BREAK_RUN_SPAN) else {
            return start;
        };
        (self.breaks.iter())
            .rev()
            .skip_while(|&&b| b >= start)
            .take_while(|&&b| b > pat)
            .last()
            .map_or(start, |&b| b.min(start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport packet of `pid` with counter `cc` (and a payload).
    fn ts(pid: u16, cc: u8) -> Vec<u8> {
        let mut p = vec![0xFF; PACKET as usize];
        p[..4].copy_from_slice(&[0x47, (pid >> 8) as u8, pid as u8, 0x10 | cc]);
        p
    }

    /// A stream of `n` packets of PAT, PMT (4096) and video (256) in turn, counters from 0.
    fn stream(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let pid = [0, 4096, 256][i % 3];
                ts(pid, (i / 3 % 16) as u8)
            })
            .collect()
    }

    fn seams_of(bytes: &[u8]) -> Vec<u64> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ts");
        std::fs::write(&path, bytes).unwrap();
        let mut s = TsSeams::open(&path).unwrap();
        std::iter::from_fn(|| s.take_up_to(bytes.len() as u64)).collect()
    }

    #[test]
    fn a_second_stream_joined_on_is_a_seam_at_its_first_table() {
        let first = stream(45);
        let joined = [first.clone(), stream(30)].concat();
        assert_eq!(seams_of(&joined), vec![first.len() as u64]);
        assert_eq!(seams_of(&first), Vec::<u64>::new());
    }

    #[test]
    fn a_counter_going_on_from_15_or_one_pid_broken_is_no_seam() {
        // 48 packets: every PID's last counter is 15, the next stream's 0 goes on from it.
        let joined = [stream(48), stream(30)].concat();
        assert_eq!(seams_of(&joined), Vec::<u64>::new());
        // Only the video PID's counter breaks to 0 (a lost packet): no seam.
        let mut damaged = stream(45);
        damaged.extend([ts(256, 0), ts(0, 15), ts(4096, 15)].concat());
        assert_eq!(seams_of(&damaged), Vec::<u64>::new());
    }

    #[test]
    fn a_stream_sending_its_tables_once_is_a_seam_where_the_next_begins() {
        // One PAT and PMT, then twenty video packets: the next stream's PAT is 0 again.
        let once: Vec<u8> = [ts(0, 0), ts(4096, 0)]
            .into_iter()
            .chain((0..20).map(|cc| ts(256, cc % 16)))
            .flatten()
            .collect();
        let joined = [once.clone(), once.clone()].concat();
        assert_eq!(seams_of(&joined), vec![once.len() as u64]);
        // A PAT sent twice, no other counter broken: no seam.
        let twice = [ts(0, 0), ts(0, 0), ts(4096, 0), ts(256, 0), ts(256, 1)].concat();
        assert_eq!(seams_of(&twice), Vec::<u64>::new());
    }

    /// A capture cut anywhere joined on breaks its counters at the join; one stream whose
    /// counters go on (a PAT sent twice aside) breaks none.
    #[test]
    fn counters_broken_where_a_cut_capture_joins_on() {
        let first = stream(45);
        let cut = stream(60)[20 * PACKET as usize..].to_vec();
        let joined = [first.clone(), cut].concat();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ts");
        std::fs::write(&path, &joined).unwrap();
        let mut s = TsSeams::open(&path).unwrap();
        assert!(!s.break_near(first.len() as u64 - 5000, 4096));
        assert!(s.break_near(first.len() as u64 - 2 * PACKET, 4096));
        assert!(s.break_near(first.len() as u64 + 2 * PACKET, 4096));
        assert!(!s.break_near(joined.len() as u64 + 10_000, 4096));
    }

    /// A capture cut before its tables, whose counters come to 0 by chance: its picture's
    /// counter broke first, at the join, which is the seam.
    #[test]
    fn a_captures_seam_is_its_first_break_after_the_last_pat() {
        let first = stream(45);
        let seam = first.len() as u64;
        let bytes = [
            first,
            ts(256, 7),
            ts(256, 8),
            ts(257, 3),
            ts(0, 0),
            ts(4096, 0),
            ts(256, 9),
        ]
        .concat();
        assert_eq!(seams_of(&bytes), vec![seam]);
    }

    #[test]
    fn bytes_lost_between_packets_are_skipped() {
        let first = stream(45);
        let mut bytes = first[..1000].to_vec();
        bytes.extend(&first[1100..]);
        let seam = bytes.len() as u64;
        bytes.extend(stream(30));
        assert_eq!(seams_of(&bytes), vec![seam]);
    }
}
