//! MPEG-TS: the file must hold whole transport packets (padding after the last one, zero
//! or 0xFF bytes, is no packet cut short). One that does not ends inside a
//! packet (cut short), or, where its last packets are in step with its end, holds a packet
//! cut short inside it (a download's copy cut off mid-packet and written again whole, bytes
//! lost): the packets from there on are out of step with those before.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, padding_to_end, read_up_to};

/// Packets checked for their sync byte, in a row, to tell which packets are in step.
const IN_A_ROW: u64 = 3;

/// MPEG-TS: the file must hold whole transport packets (188, 192 or 204 bytes).
pub fn check_transport_stream(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    r.seek(SeekFrom::Start(0)).ok()?;
    let mut head = vec![0u8; 4 * 204 + 8];
    let got = read_up_to(r, &mut head)?;
    let head = &head[..got];
    for (size, sync_offset) in [(188u64, 0u64), (192, 4), (204, 0)] {
        let synced = (0..4).all(|k| head.get((sync_offset + k * size) as usize) == Some(&0x47));
        if !synced {
            continue;
        }
        let rest = len % size;
        if rest == 0 || padding_to_end(r, len - rest, len, |b| b == 0 || b == 0xff)? {
            return None;
        }
        let packets = len / size;
        let tail_in_step =
            packets > 2 * IN_A_ROW && synced_from(r, len - IN_A_ROW * size + sync_offset, size)?;
        if !tail_in_step {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: it ends {rest} bytes into a {size}-byte transport packet"
            )));
        }
        let at = first_out_of_step(r, packets, size, sync_offset)?;
        return Some(StructureProblem::broken(format!(
            "a {size}-byte transport packet inside the file is cut short near byte {at}: the packets from there to the end are {rest} bytes out of step with those before (bytes lost inside the file, or a copy cut off inside a packet and written again)"
        )));
    }
    None
}

/// Whether [`IN_A_ROW`] packets of `size` bytes from `at` on start with a sync byte.
fn synced_from(r: &mut (impl Read + Seek), at: u64, size: u64) -> Option<bool> {
    Some(first_unsynced(r, at, size)?.is_none())
}

/// Which of the [`IN_A_ROW`] packets of `size` bytes from `at` on is the first without
/// its sync byte, if one is.
fn first_unsynced(r: &mut (impl Read + Seek), at: u64, size: u64) -> Option<Option<u64>> {
    for k in 0..IN_A_ROW {
        if !sync_at(r, at + k * size)? {
            return Some(Some(k));
        }
    }
    Some(None)
}

/// Whether byte `at` is a sync byte.
fn sync_at(r: &mut (impl Read + Seek), at: u64) -> Option<bool> {
    let mut byte = [0u8];
    r.seek(SeekFrom::Start(at)).ok()?;
    Some(read_up_to(r, &mut byte)? == 1 && byte[0] == 0x47)
}

/// Where the packet cut short starts, of `packets` whole ones of `size` bytes in step with
/// the file's start (the sync byte `sync_offset` into each), found by halving: the packet
/// before the first one in step with the start whose sync byte is not there.
fn first_out_of_step(
    r: &mut (impl Read + Seek),
    packets: u64,
    size: u64,
    sync_offset: u64,
) -> Option<u64> {
    let (mut in_step, mut out) = (0u64, packets - IN_A_ROW);
    while out - in_step > 1 {
        let mid = in_step + (out - in_step) / 2;
        match synced_from(r, mid * size + sync_offset, size)? {
            true => in_step = mid,
            false => out = mid,
        }
    }
    // The first packet of the `IN_A_ROW` from `out` without its sync byte follows the one
    // cut short.
    Some(match first_unsynced(r, out * size + sync_offset, size)? {
        Some(k) => (out + k).saturating_sub(1) * size,
        None => out * size,
    })
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

    /// Zero or 0xFF bytes after the last whole packet are padding, not a packet cut short.
    #[test]
    fn padding_after_the_last_packet_is_no_packet_cut_short() {
        let mut ts = Vec::new();
        for _ in 0..6 {
            let mut p = vec![0u8; 188];
            p[0] = 0x47;
            ts.extend(p);
        }
        for pad in [0x00, 0xff] {
            let padded = [&ts[..], &[pad; 100]].concat();
            let check = check_transport_stream(&mut Cursor::new(&padded), padded.len() as u64);
            assert_eq!(check, None, "{pad:#x}");
        }
        let junk = [&ts[..], b"a line of text\n"].concat();
        assert!(check_transport_stream(&mut Cursor::new(&junk), junk.len() as u64).is_some());
    }

    /// A packet cut short inside the file (a copy cut off mid-packet, then written again
    /// whole) is said where it is, not as the file's end cut short.
    #[test]
    fn a_packet_cut_short_inside_the_file_is_said_where_it_is() {
        let packet = |k: u8| {
            let mut p = vec![k; 188];
            p[0] = 0x47;
            p
        };
        let mut ts: Vec<u8> = (0..40).flat_map(packet).collect();
        // Packet 17 keeps only its first 100 bytes.
        ts.drain(17 * 188 + 100..18 * 188);
        let p = check_transport_stream(&mut Cursor::new(&ts), ts.len() as u64).expect("cut");
        assert!(!p.truncated, "{p:?}");
        assert!(
            p.text
                .contains("inside the file is cut short near byte 3196")
                && p.text.contains("100 bytes out of step"),
            "{p:?}"
        );
    }
}
