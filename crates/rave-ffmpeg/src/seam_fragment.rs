//! Seam fragments: `cat capture1.ts capture2.ts`, the second captured from any byte, starts
//! inside a PES. Its first transport packets of a PID carry the rest of a PES whose start
//! is not in the file, and FFmpeg's demuxer appends their payload to the PES it was
//! assembling: the last one of the part before. That part's last picture then carries the
//! tail of another picture: the MPEG-2 decoder decodes its slices into the picture's rows
//! ("end mismatch", a concealed frame, exit 3), though neither capture is damaged. The
//! fragment is found in the file's bytes (the PID's counter breaks at a packet that starts
//! no PES: `TsSeams::fragment_after`) and cut off the packet again where the packet ends
//! with exactly its first bytes: the packet is handed out as the first capture alone gives
//! it. A parser that splits frames (HEVC's, at a NAL that starts a picture) may hand out
//! the rest of the fragment as a packet of its own, with no byte position: the second
//! capture alone has no such packet (FFmpeg drops a PES whose start it never read), and
//! it is dropped too (`is_rest_of`).

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

use ffmpeg_next::Packet;
use ffmpeg_next::ffi;

use crate::structure_check::read_up_to;
use crate::ts_packet;

/// Bytes of one transport packet.
const PACKET: usize = 188;

/// The longest fragment looked for: the rest of one picture's PES.
const MAX_FRAGMENT: usize = 16 << 20;

/// The fewest bytes of a fragment a packet must end with to be cut (fewer may end it by
/// chance).
const MIN_GLUED: usize = 4;

/// The payload of `pid`'s transport packets in the file at `path` from byte `at` (one of
/// them, starting no PES) up to the PID's next packet that starts one, or the file's end;
/// `None` where the bytes are no clean run of transport packets or the run is too long.
pub fn payload(path: &Path, pid: u16, at: u64) -> Option<Vec<u8>> {
    let mut file = File::open(path).ok()?;
    file.seek(SeekFrom::Start(at)).ok()?;
    let mut fragment = Vec::new();
    let mut chunk = vec![0u8; PACKET * 512];
    loop {
        let read = read_up_to(&mut file, &mut chunk)?;
        for p in chunk[..read - read % PACKET].chunks_exact(PACKET) {
            if p[0] != 0x47 {
                return None;
            }
            if ts_packet::pid(p[1], p[2]) != pid {
                continue;
            }
            let starts_pes = p[1] & 0x40 != 0;
            if starts_pes && !fragment.is_empty() {
                return Some(fragment);
            }
            if starts_pes {
                return None;
            }
            fragment.extend_from_slice(ts_packet::payload(p)?);
            if fragment.len() > MAX_FRAGMENT {
                return None;
            }
        }
        if read < chunk.len() {
            return (!fragment.is_empty()).then_some(fragment);
        }
    }
}

/// Cut off the end of `packet` the first bytes of `fragment` it ends with (all of them, or
/// at least [`MIN_GLUED`]), where it holds more; how many were cut.
pub fn cut_off(packet: &mut Packet, fragment: &[u8]) -> Option<usize> {
    let data = packet.data()?;
    let from = data.len().saturating_sub(fragment.len()).max(1);
    let to = data.len().checked_sub(MIN_GLUED)?;
    let at = (from..=to).find(|&i| fragment.starts_with(&data[i..]))?;
    let (keep, glued) = (at as i32, data.len() - at);
    use ffmpeg_next::packet::Mut;
    // SAFETY: the packet wraps a valid AVPacket owned by the caller. make_writable gives it
    // a buffer of its own (copying a shared one) of at least its size plus the padding;
    // av_shrink_packet then lowers the size within it and zeroes the padding after it.
    unsafe {
        let raw = packet.as_mut_ptr();
        if ffi::av_packet_make_writable(raw) < 0 {
            return None;
        }
        ffi::av_shrink_packet(raw, keep);
    }
    Some(glued)
}

/// Whether `packet`, of no byte position of its own, holds nothing but the last bytes of
/// `fragment` (the rest a frame-splitting parser handed out apart: it may begin with the
/// zero byte of a 4-byte start code that the part cut off ended with, and end with that of
/// the next PES's first start code).
pub fn is_rest_of(packet: &Packet, fragment: &[u8]) -> bool {
    let Some(data) = packet.data().filter(|_| packet.position() < 0) else {
        return false;
    };
    let zeros =
        |bytes: &mut dyn Iterator<Item = &u8>| bytes.take(3).take_while(|&&b| b == 0).count();
    let (lead, trail) = (zeros(&mut data.iter()), zeros(&mut data.iter().rev()));
    (0..=lead).any(|l| {
        (0..=trail).any(|t| {
            let core = data
                .get(l..data.len().saturating_sub(t))
                .unwrap_or_default();
            core.len() >= MIN_GLUED && fragment.ends_with(core)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport packet of `pid` (`starts`: a PES starts in it) whose payload is `fill`
    /// repeated, after an adaptation field of `stuffing` bytes.
    fn ts(pid: u16, starts: bool, stuffing: usize, fill: u8) -> Vec<u8> {
        let mut p = vec![
            0x47,
            (pid >> 8) as u8 | if starts { 0x40 } else { 0 },
            pid as u8,
        ];
        match stuffing {
            0 => p.push(0x10),
            n => {
                p.extend([0x30, (n - 1) as u8]);
                p.extend(std::iter::repeat_n(0xFF, n - 1));
            }
        }
        p.resize(PACKET, fill);
        p
    }

    #[test]
    fn the_fragment_is_the_pids_payload_up_to_its_next_pes() {
        let dir = std::env::temp_dir().join(format!("rave-fragment-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("joined.ts");
        let bytes = [
            ts(256, false, 0, 1),
            ts(257, false, 0, 9),
            ts(256, false, 10, 2),
            ts(256, true, 0, 3),
        ]
        .concat();
        std::fs::write(&path, &bytes).unwrap();
        let fragment = payload(&path, 256, 0).unwrap();
        assert_eq!(fragment.len(), 184 + 174);
        assert!(fragment[..184].iter().all(|&b| b == 1));
        assert!(fragment[184..].iter().all(|&b| b == 2));
        // A packet that starts a PES there is no fragment; nor bytes out of step.
        assert_eq!(payload(&path, 256, 3 * PACKET as u64), None);
        assert_eq!(payload(&path, 256, 5), None);
        // A fragment running to the file's end is whole.
        assert_eq!(
            payload(&path, 257, PACKET as u64).map(|f| f.len()),
            Some(184)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_a_packet_ending_with_the_fragments_first_bytes_is_cut() {
        let mut packet = Packet::copy(&[7, 7, 7, 1, 2, 3, 4]);
        assert_eq!(cut_off(&mut packet, &[2, 3, 4, 1]), None);
        assert_eq!(cut_off(&mut packet, &[7, 7, 7, 1, 2, 3, 4]), None);
        assert_eq!(cut_off(&mut packet, &[3, 4]), None, "too few to tell");
        assert_eq!(cut_off(&mut packet, &[1, 2, 3, 4]), Some(4));
        assert_eq!(packet.data(), Some(&[7u8, 7, 7][..]));
        // The parser split the fragment: the packet ends with its first bytes only.
        let mut packet = Packet::copy(&[9, 9, 1, 2, 3, 4]);
        assert_eq!(cut_off(&mut packet, &[1, 2, 3, 4, 5, 6]), Some(4));
        assert_eq!(packet.data(), Some(&[9u8, 9][..]));
        let fragment = [1, 2, 3, 0, 0, 1, 4, 5, 6];
        assert!(is_rest_of(&Packet::copy(&[0, 0, 1, 4, 5, 6]), &fragment));
        assert!(is_rest_of(
            &Packet::copy(&[0, 0, 0, 1, 4, 5, 6, 0]),
            &fragment
        ));
        assert!(
            !is_rest_of(&Packet::copy(&[4, 5, 6]), &fragment),
            "too few to tell"
        );
        assert!(!is_rest_of(&Packet::copy(&[0, 0, 1, 4, 5]), &fragment));
        let mut placed = Packet::copy(&[0, 0, 1, 4, 5, 6]);
        placed.set_position(10);
        assert!(
            !is_rest_of(&placed, &fragment),
            "a packet read from a place of its own"
        );
    }
}
