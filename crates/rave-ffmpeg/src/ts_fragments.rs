//! `TsFragments`: where a part joined to a transport stream starts inside a PES, found from
//! the file's transport packet headers (`TsSeams` hands them in). A PID's counter breaking
//! at a packet that starts no PES is such a fragment where other PIDs' counters break too
//! at their next packets: every PID's does at a join, where a few packets lost inside one
//! stream break only the counters of the PIDs they carried. The PAT's breaking tells it
//! (sent a few times a second, in one packet, a burst of loss rarely takes it); where the
//! PAT's counter goes on by chance (one join in sixteen), two other PIDs' breaking do, less
//! surely (`Joined::Likely`). A counter the same as the packet before's is a packet sent
//! twice where the bytes are the same too, else a break (FFmpeg takes it for one: one join
//! in sixteen). What is done with a fragment: `seam_fragment`.

use std::collections::{HashMap, VecDeque};

/// Bytes behind a packet's start past which a fragment of another PID is forgotten: more
/// than one PES of any stream spans.
const KEPT_BYTES: u64 = 64 << 20;

/// Fragments kept at most (a stream whose counters break at every packet holds no more).
const KEPT: usize = 1024;

/// The PAT's PID.
const PAT_PID: u16 = 0;

/// Other PIDs whose next packets broke their counters that make a fragment's PID's break
/// a join's, the PAT's going on.
const OTHERS_BROKEN: usize = 2;

/// Other PIDs' next packets read after which a fragment is judged (a join's, or not).
const OTHERS_READ: usize = 8;

/// The latest fragments still judged (the others are no join's).
const JUDGED: usize = 16;

/// How surely a fragment is a join's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// The PAT's counter broke at its next packet.
    Surely,
    /// The PAT's went on, two other PIDs' broke at their next packets.
    Likely,
}

/// The start of a joined part's first transport packets of a PID, cut inside a PES.
#[derive(Debug, Clone)]
struct Fragment {
    pid: u16,
    /// Its first byte.
    at: u64,
    /// Where the PID's PES before it started (FFmpeg appends the fragment to that one).
    after_pes: u64,
    /// Whether the PAT's next packet broke its counter too (`None`: not read yet).
    pat_broke: Option<bool>,
    /// The other PIDs whose next packet was read, and how many of them broke.
    others: Vec<u16>,
    others_broke: usize,
}

impl Fragment {
    /// How surely it is a join's, as far as read.
    fn joined(&self) -> Option<Joined> {
        match self.pat_broke {
            Some(true) => Some(Joined::Surely),
            _ if self.others_broke >= OTHERS_BROKEN => Some(Joined::Likely),
            _ => None,
        }
    }
}

/// The fragments of one MPEG-TS file found so far (see the module).
#[derive(Debug, Default)]
pub(crate) struct TsFragments {
    fragments: VecDeque<Fragment>,
    /// Where each PID's latest PES started.
    pes_starts: HashMap<u16, u64>,
    /// Some bytes of each PID's latest packet.
    sigs: HashMap<u16, [u8; 16]>,
}

impl TsFragments {
    /// A transport packet of `pid` at byte `at` with a payload (`starts_pes`: a PES starts
    /// in it; `broke`, `again`: its counter neither goes on from the PID's packet before
    /// nor is the same, or is the same; `sig`: some of its bytes, the same where it is
    /// that packet sent twice).
    pub(crate) fn on_packet(
        &mut self,
        pid: u16,
        at: u64,
        starts_pes: bool,
        (broke, again): (bool, bool),
        sig: [u8; 16],
    ) {
        let before = self.sigs.insert(pid, sig);
        let broke = broke || (again && before != Some(sig));
        let pes_before = match starts_pes {
            true => self.pes_starts.insert(pid, at),
            false => self.pes_starts.get(&pid).copied(),
        };
        for f in self.fragments.iter_mut().rev().take(JUDGED) {
            if f.joined().is_some() || f.others.len() >= OTHERS_READ {
                continue;
            }
            if pid == PAT_PID {
                f.pat_broke.get_or_insert(broke);
            } else if pid != f.pid && !f.others.contains(&pid) {
                f.others.push(pid);
                f.others_broke += usize::from(broke);
            }
        }
        let (true, false, Some(after_pes)) = (broke, starts_pes, pes_before) else {
            return;
        };
        let old = at.saturating_sub(KEPT_BYTES);
        while self.fragments.front().is_some_and(|f| f.at < old) || self.fragments.len() >= KEPT {
            self.fragments.pop_front();
        }
        self.fragments.push_back(Fragment {
            pid,
            at,
            after_pes,
            pat_broke: None,
            others: Vec::new(),
            others_broke: 0,
        });
    }

    /// Where a joined part's fragment of `pid` starts, read so far, that FFmpeg appends to
    /// the PID's PES starting at byte `pes`: the one fragment after that PES, at a join,
    /// and how surely. The PID's fragments before `pes` are forgotten (packets of one PID
    /// come in byte order, not those of several), and every PID's far behind it.
    pub(crate) fn after(&mut self, pid: u16, pes: u64) -> Option<(u64, Joined)> {
        let behind = pes.saturating_sub(KEPT_BYTES);
        (self.fragments).retain(|f| f.at >= behind && (f.pid != pid || f.at > pes));
        let mut after = self
            .fragments
            .iter()
            .filter(|f| f.pid == pid && f.after_pes == pes);
        // Two breaks inside one PES: packets lost in it, not (only) a join.
        match (after.next(), after.next()) {
            (Some(f), None) => f.joined().map(|j| (f.at, j)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same, where the sole matter is whether the counter broke.
    impl TsFragments {
        fn on(&mut self, pid: u16, at: u64, starts_pes: bool, broke: bool) {
            self.on_packet(pid, at, starts_pes, (broke, false), [at as u8; 16]);
        }
    }

    #[test]
    fn a_counter_the_same_as_before_breaks_unless_the_packet_is_sent_twice() {
        let mut f = TsFragments::default();
        f.on_packet(256, 0, true, (false, false), [1; 16]);
        f.on_packet(256, 188, false, (false, true), [1; 16]);
        f.on_packet(256, 376, false, (false, true), [2; 16]);
        f.on_packet(PAT_PID, 564, true, (true, false), [0; 16]);
        assert_eq!(f.after(256, 0), Some((376, Joined::Surely)));
    }

    #[test]
    fn a_break_inside_a_pes_is_a_fragment_where_the_pat_breaks_next() {
        let mut f = TsFragments::default();
        f.on(256, 0, true, false);
        f.on(256, 188, false, false);
        f.on(256, 376, false, true);
        assert_eq!(f.after(256, 0), None, "the PAT not read yet");
        f.on(PAT_PID, 564, true, true);
        assert_eq!(f.after(256, 0), Some((376, Joined::Surely)));
        assert_eq!(f.after(256, 188), None, "no PES of its starts there");
        // Packets lost inside a PES of one stream: the PAT goes on.
        f.on(256, 1000, true, false);
        f.on(256, 1188, false, true);
        f.on(257, 1300, true, false);
        f.on(PAT_PID, 1376, true, false);
        assert_eq!(f.after(256, 1000), None);
        // The PAT's counter going on by chance at a join, two others breaking.
        f.on(256, 1500, true, false);
        f.on(256, 1688, false, true);
        f.on(257, 1876, true, true);
        f.on(PAT_PID, 2064, true, false);
        assert_eq!(f.after(256, 1500), None);
        f.on(4096, 2252, true, true);
        assert_eq!(f.after(256, 1500), Some((1688, Joined::Likely)));
        // Two breaks inside one PES, at a join: not the join's alone.
        f.on(256, 2000, true, false);
        f.on(256, 2188, false, true);
        f.on(256, 2376, false, true);
        f.on(PAT_PID, 2564, true, true);
        assert_eq!(f.after(256, 2000), None);
        // A break at a packet that starts a PES is no fragment.
        f.on(257, 3000, true, true);
        f.on(PAT_PID, 3188, true, true);
        assert_eq!(f.after(257, 3000), None);
    }
}
