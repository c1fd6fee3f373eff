//! `FreshTables`: where a new transport stream starts inside an MPEG-TS file, told by its
//! continuity counters. Each muxer starts every PID's 4-bit counter at 0, so at a join the
//! counters of the tables a muxer writes first (the PAT, PID 0; the SDT, PID 17) and the
//! next stream's other PIDs' break to 0 within a few packets of each other. One of the two
//! tables and another PID tell it: the PAT's counter may go on from 15 to 0 (one join in
//! sixteen, or every join once a muxer writes as many PATs to each segment), the SDT's
//! then tells it. (A lost packet moves one PID's counter, and to 0 one time in sixteen.)
//! Used on the file's bytes (`TsSeams`, positions in bytes) and on FFmpeg's continuity
//! errors (`SeamForgiveness`, positions in packet reads).

/// The PIDs of the tables a muxer writes first: the PAT and the SDT.
pub(crate) const TABLE_PIDS: [u32; 2] = [0, 17];

/// The signs of a new stream's first tables seen lately.
#[derive(Debug, Clone)]
pub(crate) struct FreshTables {
    /// How far apart (in the caller's positions) the signs of one new stream lie at most.
    window: u64,
    /// Where PIDs' counters broke to 0 lately (one each, in order): of the first tables,
    /// of the others.
    tables: Vec<(u64, u32)>,
    others: Vec<(u64, u32)>,
    /// Where the last new stream was found to start, and the PIDs whose signs it showed:
    /// another PID's sign within the window after it is its own; one of those PIDs
    /// breaking again starts another (a part a few packets long, a download cut short).
    last_start: Option<u64>,
    last_pids: Vec<u32>,
}

impl FreshTables {
    /// Signs of one new stream lie within `window` of each other.
    pub(crate) fn new(window: u64) -> Self {
        Self {
            window,
            tables: Vec::new(),
            others: Vec::new(),
            last_start: None,
            last_pids: Vec::new(),
        }
    }

    /// PID `pid`'s counter broke to 0 at `at` (positions ascending). Where that and the
    /// signs before it within the window make a new stream's start (one of the first
    /// tables' and another PID's, or both tables'), where it starts: the earliest of them.
    /// A stream found once: its later signs within the window after its start are its own.
    pub(crate) fn broke_to_zero(&mut self, at: u64, pid: u32) -> Option<u64> {
        if self.last_start.is_some_and(|s| at <= s + self.window) {
            if !self.last_pids.contains(&pid) {
                self.last_pids.push(pid);
                return None;
            }
            self.last_start = None;
        }
        let window = self.window;
        let recent = |&(a, _): &(u64, u32)| a + window >= at;
        self.tables.retain(recent);
        self.others.retain(recent);
        let signs = match TABLE_PIDS.contains(&pid) {
            true => &mut self.tables,
            false => &mut self.others,
        };
        if !signs.iter().any(|&(_, p)| p == pid) {
            signs.push((at, pid));
        }
        let found = !self.tables.is_empty() && (self.tables.len() + self.others.len() >= 2);
        if !found {
            return None;
        }
        let start = (self.tables.iter().chain(&self.others))
            .map(|&(a, _)| a)
            .min()?;
        self.last_pids = (self.tables.iter().chain(&self.others))
            .map(|&(_, p)| p)
            .collect();
        self.tables.clear();
        self.others.clear();
        self.last_start = Some(start);
        Some(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_tables_break_and_anothers_make_a_new_stream() {
        let mut f = FreshTables::new(8);
        // SDT, then PAT: a new stream from the SDT; its PMT and video are its own.
        assert_eq!(f.broke_to_zero(100, 17), None);
        assert_eq!(f.broke_to_zero(101, 0), Some(100));
        assert_eq!(f.broke_to_zero(102, 4096), None);
        assert_eq!(f.broke_to_zero(103, 256), None);
        // The next join, its PAT going on from 15: SDT and video together.
        assert_eq!(f.broke_to_zero(500, 17), None);
        assert_eq!(f.broke_to_zero(503, 256), Some(500));
        // A part a few packets long: its SDT and PAT break again at once, another stream.
        assert_eq!(f.broke_to_zero(505, 17), None);
        assert_eq!(f.broke_to_zero(506, 0), Some(505));
        // One PID alone, the same PID twice, two PIDs far apart, or two PIDs of no table
        // (lost packets): no new stream.
        let mut f = FreshTables::new(8);
        assert_eq!(f.broke_to_zero(100, 256), None);
        assert_eq!(f.broke_to_zero(102, 256), None);
        assert_eq!(f.broke_to_zero(104, 257), None);
        assert_eq!(f.broke_to_zero(120, 0), None);
        assert_eq!(f.broke_to_zero(140, 17), None);
    }
}
