//! AVI: its RIFF chunks, and those of every `movi` list, must chain to their ends.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, read_up_to, zeros_to_end};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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
}
