//! MP4/MOV sample tables: in each track the chunk map (`stsc`) must place, over the chunks
//! (`stco`/`co64`), every sample the size table (`stsz`/`stz2`) lists, and every chunk must
//! lie inside the file. A damaged map or chunk offset leaves the boxes chained and the file
//! playable: FFmpeg builds its index from what it reads and serves fewer samples, or other
//! bytes, without a word (one flipped `stsc` entry in a clip lost 13 of its 174 AAC packets).

use super::StructureProblem;
use super::mp4_box::{be_u32, be_uint, children_of, first_child};

/// Check every track of the `moov` body `moov`, in a file of `file_len` bytes. The first
/// problem is named; each damaged track counts once.
pub fn check_sample_tables(moov: &[u8], file_len: u64) -> Option<StructureProblem> {
    let mut found: Option<StructureProblem> = None;
    for (index, trak) in children_of(moov, b"trak").enumerate() {
        let Some(track) = Track::of(trak) else {
            continue;
        };
        let Some((text, truncated)) = track.problem(file_len) else {
            continue;
        };
        let text = format!("stream #{index} ({}): {text}", track.kind);
        match &mut found {
            Some(p) => p.count += 1,
            None => {
                found = Some(if truncated {
                    StructureProblem::truncated(text)
                } else {
                    StructureProblem::broken(text)
                })
            }
        }
    }
    found
}

/// One track's sample tables, as its `stbl` holds them.
struct Track<'a> {
    /// What the track carries, in words ("video", "audio", ...).
    kind: &'static str,
    /// The `stsz` or `stz2` body.
    sizes: SizeTable<'a>,
    /// The `stsc` body.
    map: &'a [u8],
    /// The `stco` body, or the `co64` one (`wide`).
    offsets: &'a [u8],
    wide: bool,
    /// Whether its data is in this file (every data reference is "self-contained"): the
    /// chunk offsets of a QuickTime reference movie point into other files.
    in_this_file: bool,
}

enum SizeTable<'a> {
    Stsz(&'a [u8]),
    Stz2(&'a [u8]),
}

impl<'a> Track<'a> {
    /// The track in `trak`, if it has the tables to check (a fragmented file's tracks hold
    /// empty ones; a track without them is left to the demuxer).
    fn of(trak: &'a [u8]) -> Option<Self> {
        let mdia = first_child(trak, b"mdia")?;
        let kind = match first_child(mdia, b"hdlr").and_then(|h| h.get(8..12)) {
            Some(b"vide") => "video",
            Some(b"soun") => "audio",
            Some(b"sbtl" | b"subt" | b"text" | b"clcp") => "subtitles",
            _ => "data",
        };
        let minf = first_child(mdia, b"minf")?;
        let stbl = first_child(minf, b"stbl")?;
        let sizes = match first_child(stbl, b"stsz") {
            Some(b) => SizeTable::Stsz(b),
            None => SizeTable::Stz2(first_child(stbl, b"stz2")?),
        };
        let (offsets, wide) = match first_child(stbl, b"stco") {
            Some(b) => (b, false),
            None => (first_child(stbl, b"co64")?, true),
        };
        Some(Self {
            kind,
            sizes,
            map: first_child(stbl, b"stsc")?,
            offsets,
            wide,
            in_this_file: self_contained(minf),
        })
    }

    /// What is wrong with the tables, and whether it is the file being cut short.
    fn problem(&self, file_len: u64) -> Option<(String, bool)> {
        let Some(sizes) = self.sizes.read() else {
            return Some(("its sample size table is cut short".into(), false));
        };
        let Some(chunks) = self.chunk_offsets() else {
            return Some(("its chunk offset table is cut short".into(), false));
        };
        let Some(per_chunk) = samples_per_chunk(self.map, chunks.len()) else {
            return Some((
                "its sample-to-chunk table ('stsc') is cut short or out of order".into(),
                false,
            ));
        };
        let listed = sizes.count();
        // Saturating: a damaged map may claim billions of samples in each chunk.
        let placed = per_chunk.iter().fold(0u64, |sum, &n| sum.saturating_add(n));
        if placed < listed {
            return Some((
                format!(
                    "its sample-to-chunk table ('stsc') places {placed} of the {listed} samples its size table lists: the tables are damaged and {} samples cannot be found",
                    listed - placed
                ),
                false,
            ));
        }
        if self.in_this_file {
            return chunk_outside(&chunks, &per_chunk, &sizes, file_len);
        }
        None
    }

    fn chunk_offsets(&self) -> Option<Vec<u64>> {
        let count = be_u32(self.offsets.get(4..8)?)? as usize;
        let width = if self.wide { 8 } else { 4 };
        let table = self.offsets.get(8..8 + count.checked_mul(width)?)?;
        Some(table.chunks_exact(width).map(be_uint).collect())
    }
}

impl SizeTable<'_> {
    /// The sample sizes the table lists.
    fn read(&self) -> Option<Sizes> {
        match *self {
            SizeTable::Stsz(b) => {
                let constant = be_u32(b.get(4..8)?)?;
                let count = be_u32(b.get(8..12)?)?;
                if constant != 0 {
                    return Some(Sizes::Constant(u64::from(count)));
                }
                let table = b.get(12..12 + (count as usize).checked_mul(4)?)?;
                Some(Sizes::Listed(table.chunks_exact(4).map(be_uint).collect()))
            }
            SizeTable::Stz2(b) => {
                let field = *b.get(7)?;
                let count = be_u32(b.get(8..12)?)? as usize;
                let bytes = match field {
                    4 => count.div_ceil(2),
                    8 | 16 => count.checked_mul(usize::from(field / 8))?,
                    _ => return None,
                };
                let table = b.get(12..12 + bytes)?;
                let sizes = match field {
                    4 => (0..count)
                        .map(|i| u64::from((table[i / 2] >> (4 * (1 - i % 2))) & 0xf))
                        .collect(),
                    8 => table.iter().map(|&s| u64::from(s)).collect(),
                    _ => table.chunks_exact(2).map(be_uint).collect(),
                };
                Some(Sizes::Listed(sizes))
            }
        }
    }
}

/// A track's sample sizes: one for all (the count of samples), or each listed.
enum Sizes {
    Constant(u64),
    Listed(Vec<u64>),
}

impl Sizes {
    fn count(&self) -> u64 {
        match self {
            Sizes::Constant(n) => *n,
            Sizes::Listed(v) => v.len() as u64,
        }
    }
}

/// The samples in each of `chunks` chunks, as the `stsc` body `map` places them; None if it
/// is cut short, does not start at chunk 1, or its first chunks do not rise.
fn samples_per_chunk(map: &[u8], chunks: usize) -> Option<Vec<u64>> {
    let count = be_u32(map.get(4..8)?)? as usize;
    let table = map.get(8..8 + count.checked_mul(12)?)?;
    let entries: Vec<(u64, u64)> = table
        .chunks_exact(12)
        .map(|e| (be_uint(&e[0..4]), be_uint(&e[4..8])))
        .collect();
    if chunks == 0 {
        return Some(Vec::new());
    }
    if entries.first().map(|e| e.0) != Some(1) || entries.windows(2).any(|w| w[1].0 <= w[0].0) {
        return None;
    }
    let mut per_chunk = vec![0u64; chunks];
    for (i, &(first, samples)) in entries.iter().enumerate() {
        let end = entries.get(i + 1).map_or(chunks as u64, |e| e.0 - 1);
        for chunk in first - 1..end.min(chunks as u64) {
            per_chunk[chunk as usize] = samples;
        }
    }
    Some(per_chunk)
}

/// The first chunk that starts or ends past the end of a file of `file_len` bytes. A chunk
/// cut by the end of the file is the file cut short; one that starts past it is a damaged
/// offset. Only the start is checked where one size stands for every sample (QuickTime's
/// PCM counts its samples in frames, not bytes).
fn chunk_outside(
    chunks: &[u64],
    per_chunk: &[u64],
    sizes: &Sizes,
    file_len: u64,
) -> Option<(String, bool)> {
    let mut sample = 0usize;
    for (i, (&start, &n)) in chunks.iter().zip(per_chunk).enumerate() {
        let bytes: u64 = match sizes {
            Sizes::Constant(_) => 0,
            Sizes::Listed(v) => v.get(sample..).map_or(0, |rest| {
                rest.iter()
                    .take(n as usize)
                    .fold(0u64, |sum, &b| sum.saturating_add(b))
            }),
        };
        sample = sample.saturating_add(n as usize);
        if n == 0 {
            continue;
        }
        let end = start.saturating_add(bytes);
        if start >= file_len {
            return Some((
                format!(
                    "chunk {} of {} starts at byte {start}, past the end of the file ({file_len} bytes): its chunk offsets are damaged",
                    i + 1,
                    chunks.len()
                ),
                false,
            ));
        }
        if end > file_len {
            return Some((
                format!(
                    "the file is truncated: chunk {} of {} runs to byte {end}, the file ends at {file_len}",
                    i + 1,
                    chunks.len()
                ),
                true,
            ));
        }
    }
    None
}

/// Whether every data reference of the media information `minf` is in the file itself
/// (flag 1 of each `dref` entry); a track without references is.
fn self_contained(minf: &[u8]) -> bool {
    let Some(dref) = first_child(minf, b"dinf").and_then(|d| first_child(d, b"dref")) else {
        return true;
    };
    let Some(entries) = dref.get(8..) else {
        return true;
    };
    let mut at = 0;
    while let Some((_, body, next)) = super::mp4_box::child(entries, at) {
        if body.get(3).is_none_or(|flags| flags & 1 == 0) {
            return false;
        }
        at = next;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mp4_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.extend_from_slice(body);
        b
    }

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    /// A `moov` body with one track of `handler`: sample sizes, `stsc` entries (first chunk,
    /// samples per chunk) and chunk offsets.
    fn moov(handler: &[u8; 4], sizes: &[u32], map: &[(u32, u32)], chunks: &[u32]) -> Vec<u8> {
        let mut stsz = words(&[0, 0, sizes.len() as u32]);
        stsz.extend(words(sizes));
        let mut stsc = words(&[0, map.len() as u32]);
        for &(first, n) in map {
            stsc.extend(words(&[first, n, 1]));
        }
        let mut stco = words(&[0, chunks.len() as u32]);
        stco.extend(words(chunks));
        let stbl = [
            mp4_box(b"stsz", &stsz),
            mp4_box(b"stsc", &stsc),
            mp4_box(b"stco", &stco),
        ]
        .concat();
        let mut hdlr = words(&[0, 0]);
        hdlr.extend_from_slice(handler);
        hdlr.extend(words(&[0, 0, 0]));
        let minf = mp4_box(b"minf", &mp4_box(b"stbl", &stbl));
        let mdia = mp4_box(b"mdia", &[mp4_box(b"hdlr", &hdlr), minf].concat());
        mp4_box(b"trak", &mdia)
    }

    #[test]
    fn the_chunk_map_must_place_every_listed_sample() {
        // Six samples of 10 bytes in three chunks: 2, 2, 2.
        let sizes = [10; 6];
        let chunks = [100, 200, 300];
        let good = moov(b"soun", &sizes, &[(1, 2)], &chunks);
        assert_eq!(check_sample_tables(&good, 1000), None);
        let runs = moov(b"soun", &sizes, &[(1, 1), (2, 3), (3, 2)], &chunks);
        assert_eq!(check_sample_tables(&runs, 1000), None, "1 + 3 + 2");
        let short = moov(b"soun", &sizes, &[(1, 2), (2, 1)], &chunks);
        let p = check_sample_tables(&short, 1000).expect("two samples unplaced");
        assert!(!p.truncated && p.count == 1, "{p:?}");
        assert_eq!(
            p.text,
            "stream #0 (audio): its sample-to-chunk table ('stsc') places 4 of the 6 samples its size table lists: the tables are damaged and 2 samples cannot be found"
        );
        let disordered = moov(b"vide", &sizes, &[(1, 2), (1, 2)], &chunks);
        let p = check_sample_tables(&disordered, 1000).expect("out of order");
        assert!(
            p.text
                .starts_with("stream #0 (video): its sample-to-chunk table")
        );
        let no_first = moov(b"vide", &sizes, &[(2, 3)], &chunks);
        assert!(check_sample_tables(&no_first, 1000).is_some());
        // Two tracks damaged: the first named, both counted.
        let both = [short.clone(), moov(b"vide", &sizes, &[(1, 1)], &chunks)].concat();
        let p = check_sample_tables(&both, 1000).unwrap();
        assert_eq!(p.count, 2);
        // A fragmented file's empty tables.
        assert_eq!(check_sample_tables(&moov(b"vide", &[], &[], &[]), 10), None);
    }

    #[test]
    fn chunks_must_lie_inside_the_file() {
        let sizes = [10; 4];
        let good = moov(b"vide", &sizes, &[(1, 2)], &[100, 200]);
        assert_eq!(
            check_sample_tables(&good, 220),
            None,
            "the last ends at 220"
        );
        let p = check_sample_tables(&good, 219).expect("cut");
        assert!(p.truncated, "{p:?}");
        assert_eq!(
            p.text,
            "stream #0 (video): the file is truncated: chunk 2 of 2 runs to byte 220, the file ends at 219"
        );
        let far = moov(b"vide", &sizes, &[(1, 2)], &[100, 90_000]);
        let p = check_sample_tables(&far, 1000).expect("offset past the end");
        assert!(!p.truncated, "{p:?}");
        assert!(
            p.text.contains(
                "chunk 2 of 2 starts at byte 90000, past the end of the file (1000 bytes)"
            )
        );
    }

    #[test]
    fn tables_cut_short_are_damage() {
        let mut t = moov(b"vide", &[10; 4], &[(1, 2)], &[100, 200]);
        // Claim 9 chunks where the table holds 2 (the count is the stco body's second word).
        let stco = t.windows(4).position(|w| w == b"stco").unwrap();
        t[stco + 8..stco + 12].copy_from_slice(&9u32.to_be_bytes());
        let p = check_sample_tables(&t, 1000).expect("cut table");
        assert!(
            p.text.ends_with("its chunk offset table is cut short"),
            "{}",
            p.text
        );
    }

    #[test]
    fn compact_sizes_are_read() {
        let sizes = SizeTable::Stz2(&[0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3, 0x12, 0x30]);
        let Some(Sizes::Listed(v)) = sizes.read() else {
            panic!("stz2 of 4-bit fields")
        };
        assert_eq!(v, [1, 2, 3]);
    }
}
