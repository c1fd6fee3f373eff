//! The ledger's view of the leading packets (`LeadingPackets`): those before a reading's
//! first decodable picture, and a joined part's, skipped and said; what the video probe and
//! the decoder say around them.

use super::IntegrityLedger;

impl IntegrityLedger {
    /// The video probe's errors counted (`at_end`: the reading is over): once the leading
    /// packets are known to be none.
    pub(super) fn video_probe_errors(&self, at_end: bool) -> u64 {
        let known = at_end || self.leading.settled();
        match known && self.leading.read() == 0 {
            true => self.video_probe_errors.len() as u64,
            false => 0,
        }
    }

    /// Reading starts again from the file's start (a seek that missed): its leading packets
    /// are told anew, and its streams' first packets judged.
    pub fn restart_leading(&mut self) {
        self.from_start = true;
        self.leading = self.leading.fresh();
    }

    /// Whether a video keyframe was read yet.
    pub fn keyframe_read(&self) -> bool {
        self.leading.keyframe_read()
    }

    /// Whether the video packet admitted last comes before the first decodable picture of
    /// this reading: before its first keyframe, or a leading picture of that keyframe's
    /// open GOP (the caller may skip it, uncounted as sent).
    pub fn leading_packet(&self) -> bool {
        self.leading.last_is_leading()
    }

    /// The video packet admitted last was a leading one and was not sent to the decoder.
    pub fn on_leading_skipped(&mut self) {
        let of_part = self.leading.last_is_leading_of_part();
        if let Some(log) = &mut self.decoder_log {
            match of_part {
                true => log.on_part_leading_skipped(),
                false => log.on_leading_skipped(),
            }
        }
    }

    /// The demuxer has met `parts` parts joined so far (`Demuxer::video_parts`): where that
    /// is one more, the next video packet is the first of a new part, whose packets before
    /// its first decodable picture lead (`LeadingPackets::on_part`).
    /// `of_part_before`: the packet read last belongs to the part before the latest join,
    /// handed out late (`Demuxer::of_part_before`): no leading packet of the new part.
    pub fn on_video_parts(&mut self, parts: usize, of_part_before: bool) {
        if parts > self.video_parts {
            self.video_parts = parts;
            self.leading.on_part();
        }
        self.of_part_before = of_part_before;
    }

    /// Whether the video packet admitted last leads a part joined: the caller skips it
    /// (`IntegrityLedger::on_leading_skipped`).
    pub fn part_leading_packet(&self) -> bool {
        self.leading.last_is_leading_of_part()
    }
}
