//! MP4/MOV (ISO base media): the top-level boxes must chain to the end of the file.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, read_up_to, zeros_to_end};

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
}
