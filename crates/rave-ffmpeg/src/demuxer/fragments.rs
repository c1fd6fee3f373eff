//! The demuxer's packets cut free of a joined part's first fragment (`seam_fragment`).

use ffmpeg_next::Packet;
use ffmpeg_next::packet::Flags;

use super::Demuxer;
use crate::seam_fragment;
use crate::ts_seams::Joined;

/// Bytes past a packet's start within which its PES's transport packets lie, beyond twice
/// its own size (other streams' packets between them).
const SPREAD: u64 = 1 << 20;

impl Demuxer {
    /// Cut off `packet` (read from FFmpeg) the payload of a part joined on inside a PES,
    /// which FFmpeg appended to it: the part's first transport packets of its PID, up to
    /// its first PES of its own (MPEG-TS only). Whether the packet is to be dropped: the
    /// rest of such a fragment, which a parser handed out apart.
    pub(super) fn cut_seam_fragment(&mut self, packet: &mut Packet) -> bool {
        if let Some((stream, rest)) = self.fragment_rest.take() {
            if stream == packet.stream() && seam_fragment::is_rest_of(packet, &rest) {
                return true;
            }
            if stream != packet.stream() {
                self.fragment_rest = Some((stream, rest));
            }
        }
        let (Some(seams), Ok(pos)) = (self.seams.as_mut(), u64::try_from(packet.position())) else {
            return false;
        };
        let Some(pid) =
            (self.input.stream(packet.stream())).and_then(|s| u16::try_from(s.id()).ok())
        else {
            return false;
        };
        let to = pos + 2 * packet.size() as u64 + SPREAD;
        let Some((at, joined)) = seams.fragment_after(pid, pos, to) else {
            return false;
        };
        let Some(fragment) = seam_fragment::payload(&self.path, pid, at) else {
            return false;
        };
        let Some(cut) = seam_fragment::cut_off(packet, &fragment) else {
            return false;
        };
        // FFmpeg flagged it corrupt for the fragment's broken counter: it is whole again,
        // where the join is sure (else a seam of the timestamps forgives the flag once).
        if joined == Joined::Surely {
            packet.set_flags(packet.flags() - Flags::CORRUPT);
        }
        if cut < fragment.len() {
            self.fragment_rest = Some((packet.stream(), fragment));
        }
        false
    }
}
