//! Matroska/WebM: the segment must fit in the file, its top-level elements must chain, and
//! the CRC-32 each one starts with (FFmpeg writes them and never verifies them) must match.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, read_up_to};

/// Matroska top-level element IDs (and the global Void and CRC-32 elements).
const MATROSKA_LEVEL1: [u32; 10] = [
    0x114D_9B74, // SeekHead
    0x1549_A966, // Info
    0x1654_AE6B, // Tracks
    0x1F43_B675, // Cluster
    0x1C53_BB6B, // Cues
    0x1941_A469, // Attachments
    0x1043_A770, // Chapters
    0x1254_C367, // Tags
    0xEC,        // Void
    0xBF,        // CRC-32
];

/// Matroska/WebM: the segment's declared size must fit in the file, its top-level elements
/// must follow each other to its end, and the CRC-32 an element starts with must match.
pub fn check_matroska(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    r.seek(SeekFrom::Start(0)).ok()?;
    let mut head = [0u8; 64];
    let got = read_up_to(r, &mut head)?;
    let bytes = &head[..got];
    let (id, ebml) = read_element_id(bytes)?;
    if id != 0x1A45_DFA3 {
        return None;
    }
    let (size, n) = read_vint(&bytes[ebml..])?;
    let segment_at = ebml + n + usize::try_from(size?).ok()?;
    if segment_at >= bytes.len() {
        return None;
    }
    let (id, n) = read_element_id(&bytes[segment_at..])?;
    if id != 0x1853_8067 {
        return None;
    }
    let (size, m) = read_vint(&bytes[segment_at + n..])?;
    let data_start = (segment_at + n + m) as u64;
    let have = len.saturating_sub(data_start);
    let short = size.filter(|&s| s > have).map(|s| {
        StructureProblem::truncated(format!(
            "the file is shorter than its Matroska segment declares ({s} bytes declared, {have} present): truncated or cut"
        ))
    });
    let end = size.map_or(len, |s| (data_start + s).min(len));
    match (short, walk_level1(r, data_start, end)) {
        (Some(mut p), Some(walk)) => {
            p.count += walk.count;
            Some(p)
        }
        (p, walk) => p.or(walk),
    }
}

/// Walk the segment's top-level elements from `pos` to `end`, checking their CRC-32s.
fn walk_level1(r: &mut (impl Read + Seek), mut pos: u64, end: u64) -> Option<StructureProblem> {
    let mut found: Option<StructureProblem> = None;
    let mut add = |p: StructureProblem| match &mut found {
        Some(f) => f.count += 1,
        None => found = Some(p),
    };
    let mut buf = vec![0u8; 1 << 20];
    while pos < end {
        r.seek(SeekFrom::Start(pos)).ok()?;
        let mut head = [0u8; 12];
        let got = read_up_to(r, &mut head)?;
        let parsed = read_element_id(&head[..got]).and_then(|(id, n)| {
            read_vint(&head[n..got]).map(|(size, m)| (id, size, (n + m) as u64))
        });
        let Some((id, size, header)) = parsed.filter(|(id, ..)| MATROSKA_LEVEL1.contains(id))
        else {
            add(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where a Matroska element should start"
            )));
            break;
        };
        let Some(size) = size else {
            break; // unknown size (a live recording): nothing more can be checked
        };
        let body = pos + header;
        if body + size > end {
            add(StructureProblem::truncated(format!(
                "the file is truncated: a Matroska element at byte {pos} declares {size} bytes, only {} are there",
                end.saturating_sub(body)
            )));
            break;
        }
        if size >= 6 && id != 0xBF {
            let mut crc_head = [0u8; 6];
            r.seek(SeekFrom::Start(body)).ok()?;
            if read_up_to(r, &mut crc_head)? == 6 && crc_head[..2] == [0xBF, 0x84] {
                let stored = u32::from_le_bytes(crc_head[2..6].try_into().expect("4 bytes"));
                let mut hasher = crc32fast::Hasher::new();
                let mut left = size - 6;
                while left > 0 {
                    let n = read_up_to(r, &mut buf[..left.min(1 << 20) as usize])?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                    left -= n as u64;
                }
                if hasher.finalize() != stored {
                    add(StructureProblem::broken(format!(
                        "CRC-32 mismatch in the Matroska {} at byte {pos}: its data is damaged",
                        matroska_name(id)
                    )));
                }
            }
        }
        pos = body + size;
    }
    found
}

fn matroska_name(id: u32) -> &'static str {
    match id {
        0x1F43_B675 => "cluster",
        0x1654_AE6B => "track list",
        0x1549_A966 => "segment info",
        0x1C53_BB6B => "cue index",
        0x1254_C367 => "tags",
        0x1043_A770 => "chapters",
        0x1941_A469 => "attachments",
        0x114D_9B74 => "seek index",
        _ => "element",
    }
}

/// An EBML element ID (its marker bits kept, as the specification writes IDs) and its length.
fn read_element_id(b: &[u8]) -> Option<(u32, usize)> {
    let first = *b.first()?;
    let n = first.leading_zeros() as usize + 1;
    if n > 4 || b.len() < n {
        return None;
    }
    Some((b[..n].iter().fold(0u32, |a, &x| (a << 8) | u32::from(x)), n))
}

/// An EBML size: `Some(value)`, or `None` for the reserved "unknown size"; and its length.
fn read_vint(b: &[u8]) -> Option<(Option<u64>, usize)> {
    let first = *b.first()?;
    let n = first.leading_zeros() as usize + 1;
    if n > 8 || b.len() < n {
        return None;
    }
    let mask = if n == 8 { 0 } else { 0xFFu8 >> n };
    let mut value = u64::from(first & mask);
    for &x in &b[1..n] {
        value = (value << 8) | u64::from(x);
    }
    let all_ones = value == (1u64 << (7 * n)) - 1;
    Some(((!all_ones).then_some(value), n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A Matroska element: 4-byte ID, 8-byte size, payload.
    fn element(id: u32, payload: &[u8]) -> Vec<u8> {
        let mut e = id.to_be_bytes().to_vec();
        e.push(0x01);
        e.extend_from_slice(&(payload.len() as u64).to_be_bytes()[1..]);
        e.extend_from_slice(payload);
        e
    }

    /// A cluster whose payload starts with the CRC-32 of `data`.
    fn cluster_with_crc(data: &[u8]) -> Vec<u8> {
        let mut payload = vec![0xBF, 0x84];
        payload.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        payload.extend_from_slice(data);
        element(0x1F43_B675, &payload)
    }

    fn matroska(segment: &[u8], declared: Option<u64>) -> Vec<u8> {
        let mut file = vec![0x1A, 0x45, 0xDF, 0xA3, 0x84, 1, 2, 3, 4];
        file.extend([0x18, 0x53, 0x80, 0x67, 0x01]);
        let size = declared.unwrap_or(0x00FF_FFFF_FFFF_FFFF);
        file.extend_from_slice(&size.to_be_bytes()[1..]);
        file.extend_from_slice(segment);
        file
    }

    fn mkv(d: &[u8]) -> Option<StructureProblem> {
        check_matroska(&mut Cursor::new(d), d.len() as u64)
    }

    #[test]
    fn matroska_segment_must_fit_chain_and_match_its_crcs() {
        let mut segment = element(0x1549_A966, &[0u8; 20]);
        segment.extend(cluster_with_crc(&[7u8; 300]));
        segment.extend(cluster_with_crc(&[9u8; 300]));
        let n = segment.len() as u64;
        let file = matroska(&segment, Some(n));
        assert_eq!(mkv(&file), None);
        assert_eq!(
            mkv(&matroska(&segment, None)),
            None,
            "unknown size: walk to the end"
        );

        let p = mkv(&file[..file.len() - 100]).expect("short");
        assert!(p.truncated && p.text.contains("declared"), "{p:?}");

        let mut flipped = file.clone();
        let at = flipped.len() - 10;
        flipped[at] ^= 0x10;
        let p = mkv(&flipped).expect("crc");
        assert!(
            !p.truncated && p.text.contains("CRC-32 mismatch in the Matroska cluster"),
            "{p:?}"
        );

        let mut cut = segment.clone();
        cut.drain(40..90);
        let p = mkv(&matroska(&cut, None)).expect("chain");
        assert_eq!(p.count, 1, "{p:?}");

        let mut unknown = matroska(&segment, None);
        unknown.truncate(unknown.len() - 5);
        let p = mkv(&unknown).expect("element past the end");
        assert!(p.truncated, "{p:?}");
    }
}
