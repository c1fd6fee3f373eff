//! FLV: the tags, each followed by its own length, must chain to the end of the file.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, read_up_to, zeros_to_end};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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
}
