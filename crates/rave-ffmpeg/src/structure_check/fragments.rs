//! `Fragments`: the movie fragments (`moof`) of a fragmented MP4, held against what numbers
//! them (each one's `mfhd` sequence number) and what indexes them (the `mfra` box a
//! recorder writes at the end, whose `tfra` tables point at the fragments by byte offset).
//! A fragment lost from the middle leaves a number out; one lost from either end is seen
//! only by the index, which still lists it.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};

use super::mp4_box::{be_u32, be_uint, child};
use super::{StructureProblem, read_up_to};

/// Largest fragment index read (a larger `mfra` is left unchecked).
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// The movie fragments of one file, as the walk of its top-level boxes meets them.
#[derive(Default)]
pub struct Fragments {
    /// Each fragment's sequence number and the byte where it starts, in file order.
    numbered: Vec<(u32, u64)>,
    /// Fragments in the file (`moof` boxes), numbered or not.
    present: u64,
    /// Every entry of the file's index, when it has one: (track ID, time, fragment
    /// offset).
    listed: Option<Vec<(u32, u64, u64)>>,
}

impl Fragments {
    /// A `moof` box at byte `pos`, its children between `children.0` and `children.1`.
    pub fn moof(&mut self, r: &mut (impl Read + Seek), pos: u64, children: (u64, u64)) {
        self.present += 1;
        if let Some(number) = sequence_number(r, children) {
            self.numbered.push((number, pos));
        }
    }

    /// An `mfra` box whose children lie between `children.0` and `children.1`.
    pub fn index(&mut self, r: &mut (impl Read + Seek), (start, end): (u64, u64)) {
        if end - start > MAX_INDEX_BYTES || r.seek(SeekFrom::Start(start)).is_err() {
            return;
        }
        let mut bytes = vec![0u8; (end - start) as usize];
        if read_up_to(r, &mut bytes) != Some(bytes.len()) {
            return;
        }
        let mut listed = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            // An index that cannot be read says nothing.
            let Some((kind, body, next)) = child(&bytes, at) else {
                return;
            };
            if kind == b"tfra" && !index_entries(body, &mut listed) {
                return;
            }
            at = next;
        }
        self.listed = Some(listed);
    }

    /// Read the index the file ends with, found from its last box (`mfro`, which gives the
    /// `mfra`'s size): for a file whose boxes stop chaining before the index.
    pub fn index_from_end(&mut self, r: &mut (impl Read + Seek), len: u64) {
        let mut tail = [0u8; 16];
        let found = len >= 16
            && r.seek(SeekFrom::Start(len - 16)).is_ok()
            && read_up_to(r, &mut tail) == Some(16)
            && be_u32(&tail[0..4]) == Some(16)
            && &tail[4..8] == b"mfro";
        let Some(size) = be_u32(&tail[12..16]).filter(|_| found).map(u64::from) else {
            return;
        };
        let mut head = [0u8; 8];
        let start = match len.checked_sub(size) {
            Some(start) if size >= 8 + 16 => start,
            _ => return,
        };
        let whole = r.seek(SeekFrom::Start(start)).is_ok()
            && read_up_to(r, &mut head) == Some(8)
            && be_u32(&head[0..4]).map(u64::from) == Some(size)
            && &head[4..8] == b"mfra";
        if whole {
            self.index(r, (start + 8, len));
        }
    }

    /// The fragments the index lists from byte `pos` on (past a break no reader crosses),
    /// and for each track the latest time they reach and how many of them it has entries
    /// in.
    pub fn listed_past(&self, pos: u64) -> (u64, Vec<(u32, u64, u64)>) {
        let mut past = BTreeSet::new();
        let mut ends: Vec<(u32, u64, BTreeSet<u64>)> = Vec::new();
        for &(track, time, offset) in self.listed.iter().flatten() {
            if offset < pos {
                continue;
            }
            past.insert(offset);
            match ends.iter_mut().find(|(t, ..)| *t == track) {
                Some((_, end, fragments)) => {
                    *end = (*end).max(time);
                    fragments.insert(offset);
                }
                None => ends.push((track, time, BTreeSet::from([offset]))),
            }
        }
        let ends = ends
            .into_iter()
            .map(|(track, end, fragments)| (track, end, fragments.len() as u64))
            .collect();
        (past.len() as u64, ends)
    }

    /// The distinct fragments the file's index lists (0 without an index).
    fn indexed_fragments(&self) -> usize {
        let offsets: BTreeSet<u64> = self.listed.iter().flatten().map(|e| e.2).collect();
        offsets.len()
    }

    /// Whether the walk met movie fragments (a fragmented file).
    pub fn fragmented(&self) -> bool {
        self.present > 0
    }

    /// Fragments lost: numbers skipped (and not met elsewhere in the file: fragments out of
    /// order are left to the timestamps), or fragments the index lists beyond those present,
    /// whichever counts more.
    pub fn missing(&self) -> u64 {
        self.missing_with(&self.gaps())
    }

    /// What is wrong, if a fragment is missing.
    pub fn problem(&self) -> Option<StructureProblem> {
        let gaps = self.gaps();
        let missing = self.missing_with(&gaps);
        if missing == 0 {
            return None;
        }
        let text = match gaps.first() {
            Some(gap) => {
                let whole = gap.lost == u64::from(gap.after - gap.before - 1);
                let lost = match (gap.lost, whole) {
                    (1, _) => format!("movie fragment {} is missing", gap.first_lost),
                    (_, true) => format!(
                        "movie fragments {} to {} are missing",
                        gap.before + 1,
                        gap.after - 1
                    ),
                    (n, false) => format!(
                        "{n} movie fragments numbered between {} and {} are missing",
                        gap.before, gap.after
                    ),
                };
                let more = match missing - gap.lost {
                    0 => String::new(),
                    more => format!(" ({more} more missing further on)"),
                };
                format!(
                    "{lost}: the fragments' numbers jump from {} to {} at byte {}{more}",
                    gap.before, gap.after, gap.at
                )
            }
            None => format!(
                "the fragment index at the end of the file (mfra) lists {} movie fragments where the file holds {}: the first or the last {} missing",
                self.indexed_fragments(),
                self.present,
                if missing == 1 { "one is" } else { "ones are" },
            ),
        };
        let mut problem = StructureProblem::broken(text);
        problem.count = missing;
        Some(problem)
    }

    /// Fragments lost, given the numbering's `gaps` (see `missing`).
    fn missing_with(&self, gaps: &[Gap]) -> u64 {
        let by_number = gaps.iter().map(|g| g.lost).sum::<u64>();
        let listed = self.indexed_fragments() as u64;
        by_number.max(listed.saturating_sub(self.present))
    }

    /// Each forward jump in the numbering over numbers met nowhere in the file, each lost
    /// number counted at its first jump only.
    fn gaps(&self) -> Vec<Gap> {
        /// Longest jump whose numbers are listed one by one (a longer one is a number
        /// damaged in place, counted whole).
        const LISTED: u32 = 1 << 16;
        let met: BTreeSet<u32> = self.numbered.iter().map(|&(n, _)| n).collect();
        let mut counted = BTreeSet::new();
        let mut gaps = Vec::new();
        for pair in self.numbered.windows(2) {
            let ((before, _), (after, at)) = (pair[0], pair[1]);
            if after <= before.saturating_add(1) {
                continue;
            }
            let (lost, first_lost) = match after - before - 1 {
                n if n > LISTED => (u64::from(n), Some(before + 1)),
                _ => {
                    let new: Vec<u32> = (before + 1..after)
                        .filter(|n| !met.contains(n) && counted.insert(*n))
                        .collect();
                    (new.len() as u64, new.first().copied())
                }
            };
            if let Some(first_lost) = first_lost.filter(|_| lost > 0) {
                gaps.push(Gap {
                    before,
                    after,
                    at,
                    lost,
                    first_lost,
                });
            }
        }
        gaps
    }
}

/// A jump in the fragments' numbering.
struct Gap {
    before: u32,
    after: u32,
    /// Where the fragment after the jump starts.
    at: u64,
    /// Numbers skipped there that no fragment of the file carries.
    lost: u64,
    /// The first of them.
    first_lost: u32,
}

/// The sequence number in the `mfhd` box among a fragment's children (normally the first).
fn sequence_number(r: &mut (impl Read + Seek), (start, end): (u64, u64)) -> Option<u32> {
    let mut pos = start;
    while pos + 16 <= end {
        let mut head = [0u8; 16];
        r.seek(SeekFrom::Start(pos)).ok()?;
        if read_up_to(r, &mut head)? < 16 {
            return None;
        }
        let size = u64::from(be_u32(&head[0..4])?);
        if &head[4..8] == b"mfhd" {
            return be_u32(&head[12..16]);
        }
        if size < 8 {
            return None;
        }
        pos += size;
    }
    None
}

/// Add the entries a `tfra` body lists to `listed` (its track ID, each entry's time and
/// fragment offset); false if it does not parse.
fn index_entries(body: &[u8], listed: &mut Vec<(u32, u64, u64)>) -> bool {
    let parse = || -> Option<Vec<(u32, u64, u64)>> {
        let version = *body.first()?;
        let track = be_u32(body.get(4..8)?)?;
        let sizes = be_u32(body.get(8..12)?)?;
        let count = be_u32(body.get(12..16)?)? as usize;
        let wide = if version == 1 { 8 } else { 4 };
        // traf, trun and sample numbers: 1 to 4 bytes each, as the low six bits say.
        let numbers: usize = [4, 2, 0]
            .iter()
            .map(|s| ((sizes >> s) & 3) as usize + 1)
            .sum();
        let entry = 2 * wide + numbers;
        let table = body.get(16..16 + count.checked_mul(entry)?)?;
        Some(
            table
                .chunks_exact(entry)
                .map(|e| (track, be_uint(&e[..wide]), be_uint(&e[wide..2 * wide])))
                .collect(),
        )
    };
    match parse() {
        Some(entries) => {
            listed.extend(entries);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A `tfra` of `version` listing `offsets` with one-byte traf/trun/sample numbers.
    fn tfra(version: u8, offsets: &[u64]) -> Vec<u8> {
        let mut body = vec![version, 0, 0, 0];
        body.extend(1u32.to_be_bytes()); // track
        body.extend(0u32.to_be_bytes()); // one-byte numbers
        body.extend((offsets.len() as u32).to_be_bytes());
        for (i, &o) in offsets.iter().enumerate() {
            match version {
                1 => {
                    body.extend((i as u64 * 512).to_be_bytes());
                    body.extend(o.to_be_bytes());
                }
                _ => {
                    body.extend((i as u32 * 512).to_be_bytes());
                    body.extend((o as u32).to_be_bytes());
                }
            }
            body.extend([1, 1, 1]);
        }
        let mut b = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(b"tfra");
        b.extend(body);
        b
    }

    fn indexed(children: &[u8], present: u64) -> Fragments {
        let mut f = Fragments {
            present,
            ..Default::default()
        };
        f.index(&mut Cursor::new(children), (0, children.len() as u64));
        f
    }

    #[test]
    fn the_index_shows_a_fragment_lost_at_either_end() {
        // Video and audio tables list the same four fragments.
        let both = [
            tfra(1, &[100, 200, 300, 400]),
            tfra(0, &[100, 200, 300, 400]),
        ]
        .concat();
        assert_eq!(indexed(&both, 4).problem(), None);
        let p = indexed(&both, 3).problem().expect("one lost");
        assert_eq!(p.count, 1);
        assert!(
            p.text.starts_with("the fragment index at the end of the file (mfra) lists 4 movie fragments where the file holds 3: the first or the last one is missing"),
            "{}",
            p.text
        );
        // Only keyframe fragments indexed: fewer listed than present is no loss.
        assert_eq!(indexed(&tfra(0, &[100, 300]), 4).problem(), None);
        // An index that does not parse says nothing.
        let mut cut = tfra(0, &[100, 200, 300]);
        cut.truncate(cut.len() - 3);
        let f = indexed(&cut, 1);
        assert!(f.listed.is_none() && f.problem().is_none());
    }

    #[test]
    fn the_index_past_a_break_gives_each_tracks_fragments_and_latest_time() {
        let f = Fragments {
            listed: Some(vec![
                (1, 0, 100),
                (1, 512, 200),
                (2, 480, 200),
                (1, 1024, 300),
            ]),
            ..Default::default()
        };
        let (past, mut ends) = f.listed_past(150);
        ends.sort_unstable();
        assert_eq!(past, 2);
        assert_eq!(ends, vec![(1, 1024, 2), (2, 480, 1)]);
        assert_eq!(f.listed_past(301), (0, vec![]));
    }

    #[test]
    fn numbers_met_later_are_out_of_order_not_missing() {
        let f = Fragments {
            numbered: vec![(1, 0), (3, 10), (2, 20), (4, 30)],
            present: 4,
            listed: None,
        };
        assert_eq!(f.missing(), 0);
        let f = Fragments {
            numbered: vec![(1, 0), (4, 10), (2, 20), (6, 30)],
            present: 4,
            listed: None,
        };
        // 3 is met nowhere, and 5: two lost; the first gap named is 1 to 4, where 2 is met.
        assert_eq!(f.missing(), 2);
        let p = f.problem().unwrap();
        assert!(
            p.text.starts_with("movie fragment 3 is missing: the fragments' numbers jump from 1 to 4 at byte 10 (1 more missing further on)"),
            "{}",
            p.text
        );
    }
}
