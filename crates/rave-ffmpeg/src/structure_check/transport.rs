//! MPEG-TS: the file must end on a whole transport packet.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, read_up_to};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

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
