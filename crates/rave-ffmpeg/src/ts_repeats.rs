//! A stretch of an MPEG-TS file written twice in a row: an HLS downloader that fetched
//! one segment twice and joined what it fetched, each segment a transport stream of its
//! own. The repeat starts at a seam (`TsSeams`: the segment's fresh tables) with the very
//! bytes that start the stretch before it, and goes on with them to the seam. Its
//! timestamps go back to where the stretch's did, so it looked like a join whose clocks
//! overlap, and was kept: the stretch played twice (0.4 s of a 0.4-s segment, 10 frames
//! and 18 audio packets more than the file holds) with "every frame and packet kept" said.
//! Found from the bytes, it is duplicated data, whatever the timestamps say.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

/// Bytes of one transport packet.
const PACKET: u64 = 188;

/// Transport packets at a seam that a stretch repeated starts with too (a segment's PAT
/// and PMT, the same in every segment a muxer writes): where to compare from.
const HEAD_PACKETS: u64 = 2;

/// Table packets before a seam's PAT, at most, that a copy may start with.
const TABLE_PACKETS: u64 = 4;

/// Bytes read at a time, looking back for a stretch's start and comparing it.
const WINDOW: u64 = 1 << 20;

/// Bytes looked back, at most, for the start of a repeated stretch: several segments of
/// a high-rate stream.
pub const MAX_REPEAT_BYTES: u64 = 256 << 20;

/// A stretch of the file written twice in a row: the bytes of the copy that is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// Where the dropped copy's bytes start and end.
    pub bytes: Range<u64>,
    /// Whether the dropped copy is the first (whole, or cut short: a download retried),
    /// the same bytes following it; else the copy after the same bytes.
    pub first_copy: bool,
}

/// The stretch from `seam` to `next` (the next seam), where the bytes from `next` on start
/// with it again: the first copy of a stretch written twice, whole or cut short (a
/// download retried after a failure writes the part it got, then the whole). Both start
/// where the equal tables before them do (`tables_before`: a seam is found at the PAT, the
/// SDT before it is the copy's first packet). `None` where they differ, or the file cannot
/// be read.
pub fn repeated_ahead<R: Read + Seek>(file: &mut R, seam: u64, next: u64) -> Option<Repeat> {
    if next <= seam || next - seam > MAX_REPEAT_BYTES {
        return None;
    }
    let back = tables_before(file, seam, next, 0)?;
    let (start, again) = (seam - back, next - back);
    same_bytes(file, start, again)?.then_some(Repeat {
        bytes: start..again,
        first_copy: true,
    })
}

/// The stretch from `seam` on that is the bytes just before `seam` again, where there is
/// one: the stretch that starts at an earlier packet boundary (188 bytes apart from the
/// seam, no earlier than `since`, and at most [`MAX_REPEAT_BYTES`] back) with the seam's
/// first packets, and runs to the seam, byte for byte the same as the bytes from the seam
/// on (several segments written again as a block). Both start where the equal tables
/// before them do. The nearest such stretch counts. `None` where there is none, or the
/// file cannot be read there.
pub fn repeat_before<R: Read + Seek>(file: &mut R, seam: u64, since: u64) -> Option<Repeat> {
    let head = read_at(file, seam, PACKET * HEAD_PACKETS)?;
    if head.len() as u64 != PACKET * HEAD_PACKETS {
        return None;
    }
    let lowest = since.max(seam.saturating_sub(MAX_REPEAT_BYTES));
    let mut upper = seam; // candidates start below this
    while upper >= lowest + PACKET {
        // Packet boundaries in [from, upper), read with the head's length past them.
        let span = (upper - lowest).min(WINDOW) / PACKET * PACKET;
        let from = upper - span;
        let bytes = read_at(file, from, span + PACKET * HEAD_PACKETS)?;
        let mut k = span;
        while k >= PACKET {
            k -= PACKET;
            let at = k as usize;
            if bytes.get(at..at + head.len()) != Some(&head[..]) {
                continue;
            }
            let back = tables_before(file, from + k, seam, lowest)?;
            let (start, again) = (from + k - back, seam - back);
            if same_bytes(file, start, again)? {
                let end = again + (again - start);
                return Some(Repeat {
                    bytes: again..end,
                    first_copy: false,
                });
            }
        }
        upper = from;
    }
    None
}

/// How many bytes just before `first` are the same as those just before `second`, at most
/// [`TABLE_PACKETS`] packets' worth and none before `lowest`: a copy's first packets, the tables before the PAT
/// where its seam is found (a copy cut short in the middle of a packet hides the next
/// copy's first table from the scan).
fn tables_before<R: Read + Seek>(
    file: &mut R,
    first: u64,
    second: u64,
    lowest: u64,
) -> Option<u64> {
    let most = (TABLE_PACKETS * PACKET).min(first.saturating_sub(lowest));
    let a = read_at(file, first - most, most)?;
    let b = read_at(file, second - most, most)?;
    let same = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y);
    Some(same.count() as u64)
}

/// Whether the bytes from `start` to `seam` are the same as the as many bytes from `seam`
/// on (the file holds them all); `None` where the file cannot be read.
fn same_bytes<R: Read + Seek>(file: &mut R, start: u64, seam: u64) -> Option<bool> {
    let length = seam - start;
    let mut done = 0;
    while done < length {
        let n = (length - done).min(WINDOW);
        let before = read_at(file, start + done, n)?;
        let after = read_at(file, seam + done, n)?;
        if after.len() as u64 != n || before != after {
            return Some(false);
        }
        done += n;
    }
    Some(true)
}

/// Up to `n` bytes of `file` from byte `at` (fewer at its end).
fn read_at<R: Read + Seek>(file: &mut R, at: u64, n: u64) -> Option<Vec<u8>> {
    file.seek(SeekFrom::Start(at)).ok()?;
    let mut bytes = Vec::with_capacity(n as usize);
    file.take(n).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A transport packet whose every byte is `fill` (after its sync byte): of PID 17 (an
    /// SDT, a table) for 17, of a stream's PID (0x101 and up) for the others.
    fn packet(fill: u8) -> Vec<u8> {
        let mut p = vec![fill; PACKET as usize];
        p[0] = 0x47;
        if fill == 17 {
            p[1..3].copy_from_slice(&[0, 17]);
        }
        p
    }

    /// The packets `fills`, one after another.
    fn stream(fills: &[u8]) -> Vec<u8> {
        fills.iter().flat_map(|&f| packet(f)).collect()
    }

    /// The bytes `range` covers, in packets.
    fn packets(range: Range<u64>) -> Range<u64> {
        range.start / PACKET..range.end / PACKET
    }

    #[test]
    fn a_stretch_written_twice_in_a_row_is_found_from_its_bytes() {
        // Tables (1, 2), then the segment's data, then the same segment again, then the next.
        let segment = [1, 2, 7, 8, 9, 20, 21, 22, 23, 24];
        let file = stream(&[&[1, 2, 5, 6][..], &segment, &segment, &[1, 2, 10, 11]].concat());
        let seam = 14 * PACKET;
        let mut r = Cursor::new(file.clone());
        let again = |r: &mut Cursor<Vec<u8>>, seam: u64, since: u64| {
            repeat_before(r, seam, since).map(|x| (packets(x.bytes), x.first_copy))
        };
        assert_eq!(again(&mut r, seam, 4 * PACKET), Some((14..24, false)));
        // Looked for from a seam before the stretch's start (a seam missed), still found.
        assert_eq!(again(&mut r, seam, 0), Some((14..24, false)));
        // Not where the stretch lies before `since`.
        assert_eq!(again(&mut r, seam, 5 * PACKET), None);
        // The next segment starts with the same tables and is new data.
        assert_eq!(again(&mut r, 24 * PACKET, 14 * PACKET), None);
        assert_eq!(again(&mut r, 24 * PACKET, 0), None);
        // From the first copy's seam, the next seam: the first copy.
        let ahead = repeated_ahead(&mut r, 4 * PACKET, seam).unwrap();
        assert_eq!((packets(ahead.bytes), ahead.first_copy), (4..14, true));
        assert_eq!(repeated_ahead(&mut r, seam, 24 * PACKET), None);
    }

    #[test]
    fn a_copy_starts_with_the_tables_before_its_seam() {
        // Each segment's SDT (17) before the PAT (1) where its seam is found; the last
        // segment written twice, to the file's end.
        let segment = [17, 1, 2, 7, 8, 9];
        let file = stream(&[&[17, 1, 2, 5][..], &segment, &segment].concat());
        let mut r = Cursor::new(file);
        let found = repeat_before(&mut r, 11 * PACKET, 4 * PACKET).unwrap();
        assert_eq!(packets(found.bytes), 10..16);
        let ahead = repeated_ahead(&mut r, 5 * PACKET, 11 * PACKET).unwrap();
        assert_eq!(packets(ahead.bytes), 4..10);
    }

    #[test]
    fn a_copy_cut_short_then_the_whole_is_found_ahead() {
        // The first copy's first four packets, then the whole copy: the cut one is dropped.
        let segment = [17, 1, 2, 7, 8, 9];
        let file = stream(&[&[17, 1, 2, 5][..], &segment[..4], &segment, &[17, 1, 3]].concat());
        let mut r = Cursor::new(file);
        let ahead = repeated_ahead(&mut r, 5 * PACKET, 9 * PACKET).unwrap();
        assert_eq!((packets(ahead.bytes), ahead.first_copy), (4..8, true));
        // The whole copy is followed by new data.
        assert_eq!(repeated_ahead(&mut r, 9 * PACKET, 15 * PACKET), None);
    }

    #[test]
    fn a_stretch_that_differs_anywhere_or_is_cut_short_is_no_repeat() {
        let segment = [1, 2, 7, 8, 9];
        let mut changed = segment;
        changed[3] = 0x88;
        let file = stream(&[&[1, 2, 5, 6][..], &segment, &changed].concat());
        assert_eq!(repeat_before(&mut Cursor::new(file), 9 * PACKET, 0), None);
        // The file ends before the repeat does.
        let file = stream(&[&[1, 2, 5, 6][..], &segment, &segment[..4]].concat());
        assert_eq!(repeat_before(&mut Cursor::new(file), 9 * PACKET, 0), None);
    }

    #[test]
    fn a_repeat_longer_than_a_window_is_compared_whole() {
        // Each window of the stretch is read and compared: a byte changed past the first.
        let n = (WINDOW / PACKET) as usize + 40;
        let segment: Vec<u8> = (0..n)
            .map(|i| [1, 2][i.min(1)].max((i % 200) as u8))
            .collect();
        let segment: Vec<u8> = segment
            .into_iter()
            .map(|f| if f == 17 { 18 } else { f })
            .collect();
        let mut file = stream(&[&segment[..], &segment].concat());
        let seam = n as u64 * PACKET;
        let mut r = Cursor::new(file.clone());
        let found = repeat_before(&mut r, seam, 0).map(|x| x.bytes);
        assert_eq!(found, Some(seam..2 * seam));
        let last = file.len() - 5;
        file[last] ^= 1;
        assert_eq!(repeat_before(&mut Cursor::new(file), seam, 0), None);
    }
}
