//! Up-front checks of a container's own structure against the file, before any frame is
//! decoded: MP4/MOV top-level boxes must chain to the end of the file; a Matroska segment
//! must fit in the file, its top-level elements must chain, and each one's CRC-32 (which
//! FFmpeg writes and does not verify) must match; an MPEG-TS file must end on a whole
//! transport packet; AVI RIFF chunks, and the chunks of its `movi` list, must chain to the
//! end of the file; FLV tags must chain to the end of the file, each followed by its own
//! size. FFmpeg reads such files without complaint and skips or stops early.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Something wrong with the file's structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureProblem {
    /// The file ends before its structure says it does.
    pub truncated: bool,
    /// What is wrong (the first problem), in words.
    pub text: String,
    /// How many problems were found (damaged elements).
    pub count: u64,
}

impl StructureProblem {
    fn truncated(text: String) -> Self {
        Self {
            truncated: true,
            text,
            count: 1,
        }
    }

    fn broken(text: String) -> Self {
        Self {
            truncated: false,
            text,
            count: 1,
        }
    }
}

/// Check `path`, demuxed by FFmpeg's `format` (its short name, e.g. "matroska,webm").
/// I/O errors are not reported here: the demuxer will meet and report them itself.
pub fn check(path: &Path, format: &str) -> Option<StructureProblem> {
    if !is_checked(format) {
        return None;
    }
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let names: Vec<&str> = format.split(',').collect();
    if names.contains(&"mov") || names.contains(&"mp4") {
        check_boxes(&mut file, len)
    } else if names.contains(&"matroska") || names.contains(&"webm") {
        check_matroska(&mut file, len)
    } else if names.contains(&"mpegts") {
        check_transport_stream(&mut file, len)
    } else if names.contains(&"avi") {
        check_riff(&mut file, len)
    } else if names.contains(&"flv") {
        check_flv(&mut file, len)
    } else {
        None
    }
}

/// Whether FFmpeg's demuxer `format` is one whose structure RAVE checks (MP4/MOV, Matroska/
/// WebM, MPEG-TS, AVI, FLV). In others (MPEG-PS, Ogg, raw streams...) damage is seen only
/// where the demuxer or the decoder reports it.
pub fn is_checked(format: &str) -> bool {
    const CHECKED: [&str; 7] = ["mov", "mp4", "matroska", "webm", "mpegts", "avi", "flv"];
    format.split(',').any(|f| CHECKED.contains(&f))
}

/// MP4/MOV: every top-level box must fit in the file and the boxes must end exactly at its
/// end (zero padding after the last box is accepted).
pub fn check_boxes(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    let mut pos = 0u64;
    while pos < len {
        let left = len - pos;
        let mut head = [0u8; 16];
        r.seek(SeekFrom::Start(pos)).ok()?;
        let got = read_up_to(r, &mut head[..left.min(16) as usize])?;
        if got < 8 {
            if head[..got].iter().all(|&b| b == 0) {
                return None;
            }
            return Some(StructureProblem::truncated(format!(
                "the file ends inside an MP4 box header at byte {pos}"
            )));
        }
        let kind = &head[4..8];
        if !kind.iter().all(|b| (0x20..=0x7e).contains(b)) {
            if zeros_to_end(r, pos, len)? {
                return None;
            }
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an MP4 box should start"
            )));
        }
        let name = String::from_utf8_lossy(kind).into_owned();
        let (size, header) = match u32::from_be_bytes([head[0], head[1], head[2], head[3]]) {
            0 => return None, // the last box runs to the end of the file
            1 if got >= 16 => (
                u64::from_be_bytes(head[8..16].try_into().expect("8 bytes")),
                16,
            ),
            1 => {
                return Some(StructureProblem::truncated(format!(
                    "the file ends inside the header of box '{name}' at byte {pos}"
                )));
            }
            n => (u64::from(n), 8),
        };
        if size < header {
            return Some(StructureProblem::broken(format!(
                "box '{name}' at byte {pos} has an impossible size ({size} bytes)"
            )));
        }
        if size > left {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: box '{name}' at byte {pos} declares {size} bytes, only {left} are there"
            )));
        }
        pos += size;
    }
    None
}

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

/// MPEG-TS: the file must hold whole transport packets (188, 192 or 204 bytes).
pub fn check_transport_stream(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    r.seek(SeekFrom::Start(0)).ok()?;
    let mut head = vec![0u8; 4 * 204 + 8];
    let got = read_up_to(r, &mut head)?;
    let head = &head[..got];
    for (size, sync_at) in [(188usize, 0usize), (192, 4), (204, 0)] {
        let synced = (0..4).all(|k| head.get(sync_at + k * size) == Some(&0x47));
        if synced {
            let rest = len % size as u64;
            return (rest != 0).then(|| {
                StructureProblem::truncated(format!(
                    "the file is truncated: it ends {rest} bytes into a {size}-byte transport packet"
                ))
            });
        }
    }
    None
}

/// AVI: the file is a chain of `RIFF` chunks (`AVI `, then `AVIX` past 1 GiB) that must end
/// at the end of the file (zero padding accepted); inside each, the chunks must chain to its
/// end, and so must the chunks of every `movi` list, where the frames are. A chunk's size
/// excludes its 8-byte header and is padded to an even length.
pub fn check_riff(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    let mut pos = 0u64;
    while pos < len {
        let Some((id, size)) = riff_header(r, pos, len)? else {
            if pos > 0 && zeros_to_end(r, pos, len)? {
                return None;
            }
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an AVI RIFF chunk should start"
            )));
        };
        if &id != b"RIFF" {
            if pos == 0 {
                return None; // not RIFF at all: the demuxer's business
            }
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an AVI RIFF chunk should start"
            )));
        }
        let end = pos + 8 + size;
        if end > len {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: its AVI RIFF chunk at byte {pos} declares {size} bytes, only {} are there",
                len - pos - 8
            )));
        }
        if let Some(p) = walk_riff(r, pos + 12, end, 0) {
            return Some(p);
        }
        pos = end + (end & 1);
    }
    None
}

/// Walk the chunks from `pos` to `end`, descending into `LIST` chunks whose payload holds
/// chunks (`hdrl`, `strl`, `movi`, `rec `, `odml`) up to a small depth.
fn walk_riff(
    r: &mut (impl Read + Seek),
    mut pos: u64,
    end: u64,
    depth: u32,
) -> Option<StructureProblem> {
    while pos + 8 <= end {
        let Some((id, size)) = riff_header(r, pos, end)? else {
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an AVI chunk should start"
            )));
        };
        let chunk_end = pos + 8 + size;
        if chunk_end > end {
            return Some(StructureProblem::broken(format!(
                "the AVI chunk '{}' at byte {pos} declares {size} bytes, past the end of its list",
                String::from_utf8_lossy(&id)
            )));
        }
        if &id == b"LIST" && size >= 4 && depth < 4 {
            let mut kind = [0u8; 4];
            r.seek(SeekFrom::Start(pos + 8)).ok()?;
            if read_up_to(r, &mut kind)? == 4
                && matches!(&kind, b"hdrl" | b"strl" | b"movi" | b"rec " | b"odml")
                && let Some(p) = walk_riff(r, pos + 12, chunk_end, depth + 1)
            {
                return Some(p);
            }
        }
        pos = chunk_end + (chunk_end & 1);
    }
    // Fewer than 8 bytes left (a pad byte at most): the list ends here.
    None
}

/// The FOURCC and size of the RIFF chunk header at `pos`, or `None` when fewer than 8
/// bytes remain before `end` or the FOURCC is not printable.
fn riff_header(r: &mut (impl Read + Seek), pos: u64, end: u64) -> Option<Option<([u8; 4], u64)>> {
    if end - pos < 8 {
        return Some(None);
    }
    let mut head = [0u8; 8];
    r.seek(SeekFrom::Start(pos)).ok()?;
    if read_up_to(r, &mut head)? < 8 {
        return Some(None);
    }
    let id: [u8; 4] = head[..4].try_into().expect("4 bytes");
    if !id.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return Some(None);
    }
    let size = u64::from(u32::from_le_bytes(head[4..].try_into().expect("4 bytes")));
    Some(Some((id, size)))
}

/// FLV: after the header (`FLV`, version, flags, header size) and a 4-byte zero, every tag
/// (1-byte type 8 audio, 9 video or 18 script data, 3-byte data size, 7 bytes of timestamp
/// and stream id, the data) is followed by its own length, 11 + data size; the last one
/// ends the file. Up to 1 MiB of zero padding, or a final length left out, is accepted.
pub fn check_flv(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    let mut head = [0u8; 9];
    r.seek(SeekFrom::Start(0)).ok()?;
    if read_up_to(r, &mut head)? < 9 || &head[..3] != b"FLV" {
        return None;
    }
    let mut pos = u64::from(u32::from_be_bytes(head[5..9].try_into().expect("4 bytes"))) + 4;
    let mut tag = [0u8; 11];
    while pos < len {
        r.seek(SeekFrom::Start(pos)).ok()?;
        let got = read_up_to(r, &mut tag)?;
        let kind = tag[0] & 0x1f;
        if got < 11 || !matches!(kind, 8 | 9 | 18) {
            if zeros_to_end(r, pos, len)? {
                return None;
            }
            if got < 11 && tag[..got].iter().any(|&b| matches!(b & 0x1f, 8 | 9 | 18)) {
                return Some(StructureProblem::truncated(format!(
                    "the file is truncated: it ends inside an FLV tag header at byte {pos}"
                )));
            }
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an FLV tag should start"
            )));
        }
        let size = u64::from(u32::from_be_bytes([0, tag[1], tag[2], tag[3]]));
        let data_end = pos + 11 + size;
        if data_end > len {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: the FLV tag at byte {pos} declares {size} bytes, only {} are there",
                len - pos - 11
            )));
        }
        if data_end == len {
            return None; // the last tag's own length left out
        }
        let mut back = [0u8; 4];
        r.seek(SeekFrom::Start(data_end)).ok()?;
        if read_up_to(r, &mut back)? < 4 {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: it ends inside the length after the FLV tag at byte {pos}"
            )));
        }
        if u64::from(u32::from_be_bytes(back)) != 11 + size {
            return Some(StructureProblem::broken(format!(
                "the FLV tag at byte {pos} is not followed by its length: data is missing or damaged there"
            )));
        }
        pos = data_end + 4;
    }
    None
}

/// Read until `buf` is full or the input ends; the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> Option<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(got)
}

/// Whether every byte from `pos` to `len` is zero (up to 1 MiB is checked).
fn zeros_to_end(r: &mut (impl Read + Seek), pos: u64, len: u64) -> Option<bool> {
    if len - pos > 1 << 20 {
        return Some(false);
    }
    r.seek(SeekFrom::Start(pos)).ok()?;
    let mut rest = vec![0u8; (len - pos) as usize];
    let got = read_up_to(r, &mut rest)?;
    Some(rest[..got].iter().all(|&b| b == 0))
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

    fn mp4_box(kind: &[u8; 4], payload: usize) -> Vec<u8> {
        let mut b = ((payload + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.resize(payload + 8, 0xAB);
        b
    }

    fn boxes(data: &[u8]) -> Option<StructureProblem> {
        check_boxes(&mut Cursor::new(data), data.len() as u64)
    }

    #[test]
    fn mp4_boxes_must_chain_to_the_end() {
        let mut file = mp4_box(b"ftyp", 20);
        file.extend(mp4_box(b"moov", 100));
        file.extend(mp4_box(b"mdat", 400));
        assert_eq!(boxes(&file), None);
        let mut padded = file.clone();
        padded.extend([0u8; 12]);
        assert_eq!(boxes(&padded), None, "zero padding after the last box");
        let cut = &file[..file.len() - 50];
        let p = boxes(cut).expect("truncated");
        assert!(p.truncated && p.text.contains("box 'mdat'"), "{p:?}");
        let mut garbage = file.clone();
        garbage.extend([0x01, 0x02, 0xFF, 0xFE, 0x80, 0x81, 0x00, 0x10, 9]);
        let p = boxes(&garbage).expect("garbage");
        assert!(!p.truncated && p.text.contains("unreadable data"), "{p:?}");
        let mut tiny = file.clone();
        tiny.extend([0, 0, 0, 3, b'f', b'r', b'e', b'e']);
        assert!(boxes(&tiny).unwrap().text.contains("impossible size"));
    }

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

    fn chunk(id: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut c = id.to_vec();
        c.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        c.extend_from_slice(payload);
        if payload.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    fn list(kind: &[u8; 4], chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut payload = kind.to_vec();
        chunks.iter().for_each(|c| payload.extend_from_slice(c));
        chunk(b"LIST", &payload)
    }

    fn avi() -> Vec<u8> {
        let hdrl = list(b"hdrl", &[chunk(b"avih", &[1; 56])]);
        let movi = list(
            b"movi",
            &[chunk(b"00dc", &[2; 301]), chunk(b"01wb", &[3; 100])],
        );
        let mut payload = b"AVI ".to_vec();
        payload.extend(hdrl);
        payload.extend(movi);
        payload.extend(chunk(b"idx1", &[4; 32]));
        chunk(b"RIFF", &payload)
    }

    fn riff(d: &[u8]) -> Option<StructureProblem> {
        check_riff(&mut Cursor::new(d), d.len() as u64)
    }

    #[test]
    fn avi_chunks_must_chain_to_the_end() {
        let file = avi();
        assert_eq!(riff(&file), None);
        let mut padded = file.clone();
        padded.extend([0u8; 10]);
        assert_eq!(riff(&padded), None, "zero padding after the last chunk");
        let mut extended = file.clone();
        extended.extend(chunk(b"RIFF", b"AVIXLIST\x04\0\0\0movi"));
        assert_eq!(riff(&extended), None, "an OpenDML AVIX chunk");
        assert_eq!(riff(b"not a riff file at all"), None);

        let p = riff(&file[..file.len() - 60]).expect("truncated");
        assert!(
            p.truncated && p.text.contains("RIFF chunk at byte 0"),
            "{p:?}"
        );

        // 50 bytes cut out of the first frame: the RIFF size no longer matches.
        let mut cut = file.clone();
        cut.drain(150..200);
        assert!(riff(&cut).is_some());
        // The same cut with the RIFF size fixed up: the movi chunks no longer chain.
        let size = u32::from_le_bytes(cut[4..8].try_into().unwrap()) - 50;
        cut[4..8].copy_from_slice(&size.to_le_bytes());
        let p = riff(&cut).expect("broken chain");
        assert!(!p.truncated, "{p:?}");

        let mut garbage = file.clone();
        let at = file.windows(4).position(|w| w == b"01wb").unwrap() - 4;
        garbage[at..at + 16].fill(0xFF);
        assert!(riff(&garbage).is_some(), "garbage over a chunk header");
        let mut tail = file.clone();
        tail.extend([0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1]);
        assert!(riff(&tail).is_some(), "garbage after the last chunk");
    }

    fn flv_tag(kind: u8, data: &[u8]) -> Vec<u8> {
        let mut t = vec![kind];
        t.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
        t.extend_from_slice(&[0; 7]);
        t.extend_from_slice(data);
        t.extend_from_slice(&(11 + data.len() as u32).to_be_bytes());
        t
    }

    fn flv() -> Vec<u8> {
        let mut file = b"FLV\x01\x05\0\0\0\x09\0\0\0\0".to_vec();
        file.extend(flv_tag(18, &[1; 40]));
        for i in 0..6u8 {
            file.extend(flv_tag(9, &[i; 120]));
            file.extend(flv_tag(8, &[i; 30]));
        }
        file
    }

    fn check_flv_bytes(d: &[u8]) -> Option<StructureProblem> {
        check_flv(&mut Cursor::new(d), d.len() as u64)
    }

    #[test]
    fn flv_tags_must_chain_to_the_end() {
        let file = flv();
        assert_eq!(check_flv_bytes(&file), None);
        assert_eq!(
            check_flv_bytes(&file[..file.len() - 4]),
            None,
            "the last length left out"
        );
        let mut padded = file.clone();
        padded.extend([0u8; 16]);
        assert_eq!(check_flv_bytes(&padded), None);
        assert_eq!(check_flv_bytes(b"not an flv file"), None);
        for cut in [10, 100, 150] {
            let p = check_flv_bytes(&file[..file.len() - cut]).expect("truncated");
            assert!(p.truncated, "{cut}: {p:?}");
        }
        let mut cut = file.clone();
        cut.drain(300..340);
        let p = check_flv_bytes(&cut).expect("cut out");
        assert!(!p.truncated, "{p:?}");
        let mut garbage = file.clone();
        let n = garbage.len();
        garbage[n - 60..n - 40].fill(0x77);
        assert!(check_flv_bytes(&garbage).is_some());
    }

    #[test]
    fn the_checked_formats_are_known_by_ffmpegs_names() {
        assert!(is_checked("mov,mp4,m4a,3gp,3g2,mj2"));
        assert!(is_checked("matroska,webm"));
        assert!(is_checked("mpegts"));
        assert!(!is_checked("mpeg"));
        assert!(!is_checked("ogg"));
        assert!(!is_checked("h264"));
    }

    #[test]
    fn transport_stream_must_end_on_a_packet() {
        let mut ts = Vec::new();
        for _ in 0..6 {
            let mut p = vec![0u8; 188];
            p[0] = 0x47;
            ts.extend(p);
        }
        let check = |d: &[u8]| check_transport_stream(&mut Cursor::new(d), d.len() as u64);
        assert_eq!(check(&ts), None);
        let p = check(&ts[..ts.len() - 100]).expect("cut");
        assert!(
            p.truncated && p.text.contains("88 bytes into a 188-byte"),
            "{p:?}"
        );
    }
}
