//! `SeamForgiveness`: MPEG-TS continuity errors at the seam of joined streams. Each
//! transport packet of a PID carries a 4-bit counter; `cat a.ts b.ts` restarts every PID's
//! counter at the join, and FFmpeg's demuxer logs one "Continuity check failed" per PID there
//! and flags the packet it was assembling as corrupt, although no byte was lost. RAVE's
//! splicer sees the join as a restart of the timestamps. Parts whose timestamps go on
//! (FFmpeg's segment muxer's files joined back, a part starting later) show no restart, but
//! a new stream's first tables: its muxer starts every counter at 0, so the PAT's (PID 0)
//! and another PID's break "got 0" within a few packets of each other. A continuity error
//! or corrupt packet is held for a while before it counts as damage: the first one of each
//! kind and PID within [`SEAM_READS`] packet reads of a restart or of such fresh tables
//! belongs to the join and is forgiven (at fresh tables, only a break to 0: one to another
//! value lost the new stream's first packets of that PID); any other counts. A new stream
//! writes its tables first: where a PID breaks to another value before them, the part was
//! cut from any byte (a capture) and its tables' counters came to 0 by chance: each PID's
//! first break there is forgiven, whatever its value. Nor does a new stream's muxer always
//! start the counters of the picture and sound at 0: a recorder writes tables of its own
//! and carries the broadcast's packets, counters and all. Only where another stream's
//! counter starts at 0 there too (besides the PMT's) is a break to another value a loss.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

use crate::fresh_tables::{FreshTables, TABLE_PIDS};

/// Packet reads either side of a timestamp restart within which a PID's first continuity
/// error is the join's (each PID meets the seam within a few packets of the others; the
/// restart shows once two video packets of the second part were read).
pub const SEAM_READS: u64 = 256;

/// The last of the PIDs MPEG-TS reserves for its tables (PAT, CAT, SDT, NIT, EIT...).
const LAST_TABLE_PID: u32 = 0x1F;

/// Packet reads within which the PAT's break to 0 and another PID's make a new stream's
/// start (a muxer writes its tables one after another).
const FRESH_TABLES_READS: u64 = 8;

/// What the demuxer said about a transport stream's packet counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// It logged a continuity error.
    Continuity,
    /// It flagged a packet corrupt.
    Corrupt,
}

/// A continuity error or corrupt packet, held.
#[derive(Debug, Clone)]
struct Pending {
    read: u64,
    /// Its place among the continuity errors logged (several may come at one read).
    seq: u64,
    pid: Option<u32>,
    kind: Kind,
    /// Whether the counter broke to 0 (a continuity error).
    to_zero: bool,
    text: String,
}

/// The continuity errors of one reading, with those of the seams of joined streams forgiven.
#[derive(Debug, Clone)]
pub struct SeamForgiveness {
    reads: u64,
    pending: VecDeque<Pending>,
    counted: u64,
    first: Option<String>,
    /// The latest joins (a restart, a new stream's fresh tables, or both).
    seams: Vec<Seam>,
    /// The signs of a new stream's first tables (packet reads).
    fresh: FreshTables,
    /// Continuity errors logged so far.
    logged: u64,
    /// The continuity errors of the latest reads that named their PID.
    recent: VecDeque<Break>,
}

/// A PID's counter break, as a continuity error told it.
#[derive(Debug, Clone, Copy)]
struct Break {
    /// The read it came at, and its place among the errors logged.
    read: u64,
    seq: u64,
    pid: u32,
    /// Whether the counter broke to 0.
    to_zero: bool,
}

impl Break {
    /// Whether its PID is one of the tables a muxer writes first (PAT, SDT).
    fn of_first_tables(&self) -> bool {
        TABLE_PIDS.contains(&self.pid)
    }
}

impl Default for SeamForgiveness {
    fn default() -> Self {
        Self {
            reads: 0,
            pending: VecDeque::new(),
            counted: 0,
            first: None,
            seams: Vec::new(),
            fresh: FreshTables::new(FRESH_TABLES_READS),
            logged: 0,
            recent: VecDeque::new(),
        }
    }
}

/// One join of the stream: where it showed, and what was forgiven at it.
#[derive(Debug, Clone)]
struct Seam {
    /// The read at which it showed (its first sign).
    at: u64,
    /// What it showed by: a restart of the timestamps, fresh tables.
    restart: bool,
    tables: bool,
    /// The place among the errors of the first table PID's break at its fresh tables, where
    /// they start the part: no other PID broke to another value than 0 before them.
    tables_seq: Option<u64>,
    /// The PIDs whose seam error (of a kind) was forgiven.
    forgiven: HashSet<(u32, Kind)>,
}

/// The PID a continuity message names ("Continuity check failed for pid 256 expected ...").
fn pid_of(text: &str) -> Option<u32> {
    let rest = text.split("pid ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The counter a continuity message says came ("... expected 6 got 0").
fn got_of(text: &str) -> Option<u32> {
    text.rsplit("got ").next()?.trim().parse().ok()
}

impl SeamForgiveness {
    /// A packet was read; `logged` are the continuity errors logged since the last one.
    pub fn on_read(&mut self, logged: Vec<String>) {
        self.reads += 1;
        let reads = self.reads;
        while self
            .recent
            .front()
            .is_some_and(|b| b.read + 4 * SEAM_READS < reads)
        {
            self.recent.pop_front();
        }
        for text in logged {
            let pid = pid_of(&text);
            let to_zero = got_of(&text) == Some(0);
            let seq = self.logged;
            self.logged += 1;
            if let Some(pid) = pid {
                let read = reads;
                self.recent.push_back(Break {
                    read,
                    seq,
                    pid,
                    to_zero,
                });
            }
            if to_zero
                && let Some(pid) = pid
                && let Some(start) = self.fresh.broke_to_zero(reads, pid)
            {
                let tables_seq = (self.recent.iter())
                    .filter(|b| b.to_zero && b.of_first_tables() && b.read >= start)
                    .map(|b| b.seq)
                    .min();
                // A break to another value just before them: a capture's, by chance.
                let by_chance = tables_seq.is_some_and(|t| {
                    (self.recent.iter()).any(|b| {
                        !b.to_zero
                            && !b.of_first_tables()
                            && b.read + SEAM_READS >= start
                            && b.seq < t
                    })
                });
                self.open_seam(start, Some(tables_seq.filter(|_| !by_chance)));
            }
            self.pending.push_back(Pending {
                read: reads,
                seq,
                pid,
                kind: Kind::Continuity,
                to_zero,
                text,
            });
        }
        self.settle(false);
    }

    /// The packet read last, of the stream with transport PID `pid`, is flagged corrupt
    /// (`text` says so).
    pub fn on_corrupt(&mut self, pid: Option<u32>, text: String) {
        self.pending.push_back(Pending {
            read: self.reads,
            seq: self.logged,
            pid,
            kind: Kind::Corrupt,
            to_zero: false,
            text,
        });
        self.settle(false);
    }

    /// The timestamps restarted at the packet read last (the splicer saw a join).
    pub fn on_restart(&mut self) {
        self.open_seam(self.reads, None);
        self.settle(false);
    }

    /// A join at read `at`, shown by a restart (`tables` none) or by fresh tables (`tables`:
    /// the place among the errors of their first table PID's break). The latest join, near
    /// and shown by the other sign only, is the same one (a part's fresh tables, then its
    /// restart a few reads on), whose PIDs each have one error forgiven.
    fn open_seam(&mut self, at: u64, tables: Option<Option<u64>>) {
        let restart = tables.is_none();
        if let Some(last) = self.seams.last_mut()
            && last.at.abs_diff(at) <= SEAM_READS
        {
            let sign = if restart {
                &mut last.restart
            } else {
                &mut last.tables
            };
            if !*sign {
                *sign = true;
                last.tables_seq = last.tables_seq.or(tables.flatten());
                return;
            }
        }
        let reads = self.reads;
        self.seams.retain(|s| s.at + 2 * SEAM_READS >= reads);
        self.seams.push(Seam {
            at,
            restart,
            tables: !restart,
            tables_seq: tables.flatten(),
            forgiven: HashSet::new(),
        });
    }

    /// Forgive what belongs to the seam, count what is old enough to belong to none (or all
    /// of it, `at_end`).
    fn settle(&mut self, at_end: bool) {
        while let Some(front) = self.pending.front() {
            // The joins near it, nearest first: the nearest that has not forgiven its PID
            // yet forgives it (two joins a short part apart each forgive one break per PID,
            // whichever side of each its break came).
            let read = front.read;
            let key = |s: &Seam| (s.at.abs_diff(read), s.at > read);
            let is_near = |s: &Seam| s.at.abs_diff(read) <= SEAM_READS;
            let young = !at_end && self.reads - read <= SEAM_READS;
            // Whether the PMT and a stream's counters started at 0 at a join's fresh tables.
            let recent = &self.recent;
            let counters_from_zero = |s: &Seam| {
                let zeros = (recent.iter()).filter(|b| {
                    b.to_zero && b.pid > LAST_TABLE_PID && b.read.abs_diff(s.at) <= SEAM_READS
                });
                zeros.map(|b| b.pid).collect::<HashSet<_>>().len() >= 2
            };
            let mut near: Vec<&mut Seam> = self.seams.iter_mut().filter(|s| is_near(s)).collect();
            near.sort_by_key(|s| key(s));
            // At a new stream's fresh tables every counter starts at 0: one that breaks to
            // another value lost the new stream's first packets of its PID; for a table
            // PID (the reserved ones, SDT, NIT...: a part cut right after its first SDT)
            // that loses none of its picture or sound, sent again and again.
            // (Only after tables that start the part, and where its other streams' counters
            // start at 0: see the module. That is known only once the seam is read.)
            let lost_first = front.kind == Kind::Continuity
                && !front.to_zero
                && front.pid.is_none_or(|pid| pid > LAST_TABLE_PID);
            let after_tables = |s: &&mut Seam| s.tables_seq.is_some_and(|t| front.seq > t);
            let forgiven = match (near.first().map(after_tables), front.pid) {
                (Some(true), _) if lost_first && (young || counters_from_zero(near[0])) => false,
                (Some(_), Some(pid)) => near
                    .iter_mut()
                    .any(|s| s.forgiven.insert((pid, front.kind))),
                _ => false,
            };
            if !forgiven && young {
                break;
            }
            let e = self.pending.pop_front().expect("a front");
            if !forgiven {
                self.counted += 1;
                self.first.get_or_insert(e.text);
            }
        }
    }

    /// Continuity errors counted as damage so far (`at_end`: the reading is over, nothing
    /// is held any more).
    pub fn errors(&self, at_end: bool) -> u64 {
        self.settled(at_end).counted
    }

    /// The first of them, as FFmpeg worded it.
    pub fn first(&self, at_end: bool) -> Option<String> {
        self.settled(at_end).first.clone()
    }

    /// This tally, or (`at_end`) a copy with nothing held any more.
    fn settled(&self, at_end: bool) -> Cow<'_, Self> {
        match at_end {
            true => {
                let mut settled = self.clone();
                settled.settle(true);
                Cow::Owned(settled)
            }
            false => Cow::Borrowed(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(pid: u32) -> String {
        format!("Continuity check failed for pid {pid} expected 6 got 0")
    }

    #[test]
    fn the_pid_is_read_from_ffmpegs_message() {
        assert_eq!(pid_of(&cc(4096)), Some(4096));
        assert_eq!(pid_of("Continuity check failed"), None);
    }

    #[test]
    fn each_pids_first_error_at_a_join_is_forgiven() {
        let mut s = SeamForgiveness::default();
        for _ in 0..1000 {
            s.on_read(vec![]);
        }
        // The seam: every PID's counter breaks, then the restart shows.
        s.on_read(vec![cc(17), cc(4096)]);
        s.on_read(vec![cc(256)]);
        s.on_corrupt(Some(256), "corrupt packet in stream #0".into());
        s.on_read(vec![cc(257)]);
        assert_eq!(s.errors(false), 0, "held, not yet counted");
        s.on_restart();
        // A sparse PID meets the seam later.
        for _ in 0..100 {
            s.on_read(vec![]);
        }
        s.on_read(vec![cc(258)]);
        assert_eq!((s.errors(true), s.first(true)), (0, None));
        // A second break of a PID near the seam is damage, and a second corrupt packet.
        s.on_read(vec![cc(256)]);
        assert_eq!(s.errors(true), 1);
        assert_eq!(s.first(true), Some(cc(256)));
        s.on_corrupt(Some(256), "corrupt packet in stream #0".into());
        assert_eq!(s.errors(true), 2);
    }

    #[test]
    fn a_new_streams_fresh_tables_are_a_seam_without_a_restart() {
        let to_zero = |pid: u32| format!("Continuity check failed for pid {pid} expected 11 got 0");
        let mut s = SeamForgiveness::default();
        for _ in 0..1000 {
            s.on_read(vec![]);
        }
        // The next part's SDT, PAT and PMT, then its video and audio; no restart.
        s.on_read(vec![to_zero(17), to_zero(0), to_zero(4096)]);
        s.on_read(vec![to_zero(256)]);
        s.on_corrupt(Some(256), "corrupt packet in stream #0".into());
        s.on_read(vec![to_zero(257)]);
        assert_eq!(s.errors(true), 0);
        // Its restart, a few packets on, is the same join: a second break is damage.
        s.on_restart();
        s.on_read(vec![to_zero(256)]);
        assert_eq!(s.errors(true), 1);
        // A PID whose counter breaks to 2 at the fresh tables lost its first packets.
        let mut lost = SeamForgiveness::default();
        lost.on_read(vec![to_zero(17), to_zero(0), to_zero(4096)]);
        lost.on_read(vec![to_zero(256), cc(257).replace("got 0", "got 2")]);
        assert_eq!(lost.errors(true), 1);
        // A capture cut from any byte whose video and tables' counters come to 0 by
        // chance: its audio broke to 15 before the tables came, no first packet lost.
        let mut capture = SeamForgiveness::default();
        capture.on_read(vec![to_zero(256), cc(257).replace("got 0", "got 15")]);
        capture.on_read(vec![to_zero(0), to_zero(4096)]);
        capture.on_restart();
        assert_eq!(capture.errors(true), 0);
        // A recorder's part: its own tables from 0, the broadcast's counters after them.
        let mut recorder = SeamForgiveness::default();
        recorder.on_read(vec![to_zero(0), to_zero(4096)]);
        recorder.on_read(vec![cc(256).replace("got 0", "got 6")]);
        recorder.on_read(vec![cc(257).replace("got 0", "got 11")]);
        assert_eq!(recorder.errors(false), 0, "held while the seam is read");
        assert_eq!(recorder.errors(true), 0);
        // Nor does its video, breaking to 7 after them.
        let mut capture = SeamForgiveness::default();
        capture.on_read(vec![cc(257).replace("got 0", "got 4")]);
        capture.on_read(vec![to_zero(0), to_zero(4096)]);
        capture.on_read(vec![cc(256).replace("got 0", "got 7")]);
        capture.on_restart();
        assert_eq!(capture.errors(true), 0);
        // The SDT's breaking to 1 (the part cut right after its first SDT) loses nothing
        // of the picture or sound: forgiven once, as at any join.
        let mut cut = SeamForgiveness::default();
        cut.on_read(vec![to_zero(0), to_zero(4096)]);
        cut.on_read(vec![to_zero(256), cc(17).replace("got 0", "got 1")]);
        assert_eq!(cut.errors(true), 0);
        // Counters broken to other values, or the PAT's alone, are no new stream.
        let mut s = SeamForgiveness::default();
        let to_three = |pid: u32| cc(pid).replace("got 0", "got 3");
        s.on_read(vec![to_three(0), to_three(256)]);
        s.on_read(vec![to_zero(0)]);
        for _ in 0..20 {
            s.on_read(vec![]);
        }
        s.on_read(vec![to_zero(257)]);
        assert_eq!(s.errors(true), 4);
    }

    /// Three parts, the middle one shorter than the reads a seam reaches: each join's
    /// breaks, read just before its restart shows, are forgiven. (The second join's were
    /// held against the first, which had forgiven its PIDs already: exit 3.)
    #[test]
    fn two_joins_a_short_part_apart_each_forgive_their_breaks() {
        let mut s = SeamForgiveness::default();
        for _ in 0..1000 {
            s.on_read(vec![]);
        }
        for _ in 0..2 {
            s.on_read(vec![cc(257), cc(256)]);
            s.on_read(vec![cc(0), cc(4096)]);
            s.on_restart();
            for _ in 0..150 {
                s.on_read(vec![]);
            }
        }
        assert_eq!((s.errors(true), s.first(true)), (0, None));
    }

    #[test]
    fn errors_away_from_any_restart_count_once_old_enough_or_at_the_end() {
        let mut s = SeamForgiveness::default();
        s.on_read(vec![cc(256)]);
        assert_eq!((s.errors(false), s.errors(true)), (0, 1));
        for _ in 0..=SEAM_READS {
            s.on_read(vec![]);
        }
        assert_eq!(s.errors(false), 1, "counted once no restart came near it");
        // A restart long after does not forgive it.
        for _ in 0..1000 {
            s.on_read(vec![]);
        }
        s.on_read(vec![cc(257)]);
        for _ in 0..(SEAM_READS + 1) {
            s.on_read(vec![]);
        }
        s.on_restart();
        assert_eq!(s.errors(true), 2);
    }
}
