//! `SeamForgiveness`: MPEG-TS continuity errors at the seam of joined streams. Each
//! transport packet of a PID carries a 4-bit counter; `cat a.ts b.ts` restarts every PID's
//! counter at the join, and FFmpeg's demuxer logs one "Continuity check failed" per PID there
//! and flags the packet it was assembling as corrupt, although no byte was lost. RAVE's
//! splicer sees the join as a restart of the timestamps. A continuity error or corrupt
//! packet is held for a while before it counts as damage: the first one of each kind and
//! PID within [`SEAM_READS`] packet reads of a restart belongs to the join and is forgiven;
//! any other counts.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

/// Packet reads either side of a timestamp restart within which a PID's first continuity
/// error is the join's (each PID meets the seam within a few packets of the others; the
/// restart shows once two video packets of the second part were read).
pub const SEAM_READS: u64 = 256;

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
    pid: Option<u32>,
    kind: Kind,
    text: String,
}

/// The continuity errors of one reading, with those of the seams of joined streams forgiven.
#[derive(Debug, Clone, Default)]
pub struct SeamForgiveness {
    reads: u64,
    pending: VecDeque<Pending>,
    counted: u64,
    first: Option<String>,
    /// The latest restart: the read it showed at, and the PIDs whose seam error (of a kind)
    /// was forgiven.
    seam: Option<(u64, HashSet<(u32, Kind)>)>,
}

/// The PID a continuity message names ("Continuity check failed for pid 256 expected ...").
fn pid_of(text: &str) -> Option<u32> {
    let rest = text.split("pid ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

impl SeamForgiveness {
    /// A packet was read; `logged` are the continuity errors logged since the last one.
    pub fn on_read(&mut self, logged: Vec<String>) {
        self.reads += 1;
        for text in logged {
            self.pending.push_back(Pending {
                read: self.reads,
                pid: pid_of(&text),
                kind: Kind::Continuity,
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
            pid,
            kind: Kind::Corrupt,
            text,
        });
        self.settle(false);
    }

    /// The timestamps restarted at the packet read last (the splicer saw a join).
    pub fn on_restart(&mut self) {
        self.seam = Some((self.reads, HashSet::new()));
        self.settle(false);
    }

    /// Forgive what belongs to the seam, count what is old enough to belong to none (or all
    /// of it, `at_end`).
    fn settle(&mut self, at_end: bool) {
        while let Some(front) = self.pending.front() {
            let forgiven = match (&mut self.seam, front.pid) {
                (Some((at, pids)), Some(pid)) if front.read.abs_diff(*at) <= SEAM_READS => {
                    pids.insert((pid, front.kind))
                }
                _ => false,
            };
            if !forgiven && !at_end && self.reads - front.read <= SEAM_READS {
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
