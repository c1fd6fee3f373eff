//! The demuxer's packets cut free of a joined part's first fragment (`seam_fragment`), and
//! the codec changes of a transport stream's PIDs said at its end (`TsStreamTypes`).

use ffmpeg_next::Packet;
use ffmpeg_next::packet::Flags;

use super::Demuxer;
use crate::seam_fragment;
use crate::ts_seams::Joined;

/// Bytes past a packet's start within which its PES's transport packets lie, beyond twice
/// its own size (other streams' packets between them).
const SPREAD: u64 = 1 << 20;

impl Demuxer {
    /// At the end of the file: each PID whose declared codec changed, said as damage (FFmpeg
    /// read its packets after the change with the first codec's parser, which dropped them).
    pub(super) fn note_codec_changes(&mut self) {
        let Some(seams) = self.seams.as_mut() else {
            return;
        };
        for c in seams.codec_changes_to_end() {
            let stream = (self.input.streams())
                .find(|s| s.id() == i32::from(c.pid))
                .map_or(String::new(), |s| format!(" (stream #{})", s.index()));
            self.repaired.push(super::Repaired {
                text: format!(
                    "transport PID {:#x}{stream} changes codec at byte {} (stream type {:#04x} to {:#04x}: a part joined with that stream coded otherwise); FFmpeg reads it on as the first codec and drops what it cannot parse, so the output lacks that stream from there: convert the parts to one codec, or upscale them apart",
                    c.pid, c.at, c.from.0, c.to.0
                ),
                frames_dropped: 0,
                packets_dropped: 0,
                explains_others: true,
            });
        }
    }

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
