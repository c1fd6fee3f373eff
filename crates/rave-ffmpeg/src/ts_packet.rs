//! The fields of one MPEG-TS transport packet that RAVE's own scans of a file's bytes read
//! (`TsSeams`, `seam_fragment`, `TsStreamTypes`).

/// A 13-bit PID from the two bytes that hold it (a packet header's, a PAT or PMT entry's).
pub(crate) fn pid(hi: u8, lo: u8) -> u16 {
    u16::from(hi & 0x1F) << 8 | u16::from(lo)
}

/// The payload of transport packet `p` (188 bytes), after its adaptation field: empty
/// where it carries none; `None` where the adaptation field runs past the packet.
pub(crate) fn payload(p: &[u8]) -> Option<&[u8]> {
    let start = match (p[3] >> 4) & 3 {
        1 => 4,
        3 => 5 + usize::from(p[4]),
        _ => return Some(&[]),
    };
    p.get(start..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_follows_the_adaptation_field() {
        let mut p = vec![0x47, 0x41, 0x00, 0x10];
        p.resize(188, 7);
        assert_eq!(pid(p[1], p[2]), 0x100);
        assert_eq!(payload(&p).map(<[u8]>::len), Some(184));
        p[3] = 0x30;
        p[4] = 10;
        assert_eq!(payload(&p).map(<[u8]>::len), Some(173));
        p[3] = 0x20;
        assert_eq!(payload(&p), Some(&[][..]));
        p[3] = 0x30;
        p[4] = 200;
        assert_eq!(payload(&p), None);
    }
}
