//! A stretch of an MPEG-TS file written twice in a row: an HLS downloader that fetched
//! one segment twice and joined what it fetched, each segment a transport stream of its
//! own. The repeat starts at a seam (`TsSeams`: the segment's fresh tables) with the very
//! bytes that start the stretch before it, and goes on with them to the seam. Its
//! timestamps go back to where the stretch's did, so it looked like a join whose clocks
//! overlap, and was kept: the stretch played twice (0.4 s of a 0.4-s segment, 10 frames
//! and 18 audio packets more than the file holds) with "every frame and packet kept" said.
//! Found from the bytes, it is duplicated data, whatever the timestamps say.

use std::io::{Read, Seek, SeekFrom};

/// Bytes of one transport packet.
const PACKET: u64 = 188;

/// Transport packets at a seam that a stretch repeated starts with too (a segment's PAT
/// and PMT, the same in every segment a muxer writes): where to compare from.
const HEAD_PACKETS: u64 = 2;

/// Bytes read at a time, looking back for a stretch's start and comparing it.
const WINDOW: u64 = 1 << 20;

/// Bytes looked back, at most, for the start of a repeated stretch: several segments of
/// a high-rate stream.
pub const MAX_REPEAT_BYTES: u64 = 256 << 20;

/// How many bytes from `seam` on are the bytes just before `seam` again, where any are:
/// the stretch that starts at an earlier packet boundary (188 bytes apart from the seam,
/// no earlier than `since`, a seam before, and at most [`MAX_REPEAT_BYTES`] back) with the
/// seam's first packets, and runs to the seam, byte for byte the same as the bytes from
/// the seam on. The nearest such stretch counts. `None` where there is none, or the file
/// cannot be read there.
pub fn repeat_before<R: Read + Seek>(file: &mut R, seam: u64, since: u64) -> Option<u64> {
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
            let starts_alike = bytes.get(at..at + head.len()) == Some(&head[..]);
            if starts_alike && same_bytes(file, from + k, seam)? {
                return Some(seam - (from + k));
            }
        }
        upper = from;
    }
    None
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

    /// A transport packet whose every byte is `fill` (after its sync byte).
    fn packet(fill: u8) -> Vec<u8> {
        let mut p = vec![fill; PACKET as usize];
        p[0] = 0x47;
        p
    }

    /// The packets `fills`, one after another.
    fn stream(fills: &[u8]) -> Vec<u8> {
        fills.iter().flat_map(|&f| packet(f)).collect()
    }

    #[test]
    fn a_stretch_written_twice_in_a_row_is_found_from_its_bytes() {
        // Tables (1, 2), then the segment's data, then the same segment again, then the next.
        let segment = [1, 2, 7, 8, 9];
        let file = stream(&[&[1, 2, 5, 6][..], &segment, &segment, &[1, 2, 10, 11]].concat());
        let seam = 9 * PACKET;
        let mut r = Cursor::new(file.clone());
        assert_eq!(repeat_before(&mut r, seam, 4 * PACKET), Some(5 * PACKET));
        // Looked for from a seam before the stretch's start (a seam missed), still found.
        assert_eq!(repeat_before(&mut r, seam, 0), Some(5 * PACKET));
        // Not where the stretch lies before `since`.
        assert_eq!(repeat_before(&mut r, seam, 5 * PACKET), None);
        // The next segment starts with the same tables and is new data.
        assert_eq!(repeat_before(&mut r, 14 * PACKET, 9 * PACKET), None);
        assert_eq!(repeat_before(&mut r, 14 * PACKET, 0), None);
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
        let mut file = stream(&[&segment[..], &segment].concat());
        let seam = n as u64 * PACKET;
        let mut r = Cursor::new(file.clone());
        assert_eq!(repeat_before(&mut r, seam, 0), Some(seam));
        let last = file.len() - 5;
        file[last] ^= 1;
        assert_eq!(repeat_before(&mut Cursor::new(file), seam, 0), None);
    }
}
