//! Where a joined part's picture starts, for the reader: its packets before its first
//! keyframe are skipped (`LeadingPackets::on_part`), and the part before's last packets,
//! handed out after the new part's first (a PES is complete only when the next one of its
//! PID starts), are told apart. A part of its own (a capture joined, which may start
//! mid-GOP) shows a seam in the bytes near its picture: fresh tables just before it, or
//! counters broken where a capture cut anywhere joins on (the video's may go on by chance,
//! the tables' and the sound's breaking a little after the picture's first PES). A restart of the timestamps inside one
//! coded stream (its pictures' references go on) shows none, and starts no part.

use ffmpeg_next::Packet;

use super::Demuxer;

/// Bytes between a seam (`TsSeams`) and the first video packet of the part it starts, at
/// most: a part's tables, its sound's first PES, a PCR or two come before its picture, or
/// (a cut capture) just after.
const SEAM_TO_PART_BYTES: u64 = 4 << 20;

impl Demuxer {
    /// `packet` was placed as its stream's first of a new part (`video`: of the main
    /// video stream): count the part where its picture starts after a seam.
    pub(super) fn note_video_part(&mut self, packet: &Packet, video: bool) {
        let pos = packet.position();
        if !video || pos < 0 || self.splicer.starts_part(self.video_index) {
            return;
        }
        let pos = pos as u64;
        let near = |s: u64| pos >= s && pos - s <= SEAM_TO_PART_BYTES;
        let after_seam = self.last_seam.is_some_and(near)
            || (self.seams.as_mut()).is_some_and(|s| s.break_near(pos, SEAM_TO_PART_BYTES));
        if after_seam {
            self.video_parts += 1;
        }
    }

    /// Parts joined at a seam of the file's bytes whose video has started so far: the
    /// packet handed out last that made the count grow is the first video packet of a new
    /// part.
    pub fn video_parts(&self) -> usize {
        self.video_parts
    }

    /// Whether the packet handed out last belongs to the part before the latest join,
    /// handed out after the new part's first packets.
    pub fn of_part_before(&self) -> bool {
        self.of_part_before
    }
}
