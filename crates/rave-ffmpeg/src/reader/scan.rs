//! Reading a `VideoReader`'s file without decoding its video: the rest of it once decoding
//! stops (so the damage report covers it all), its keyframe index, and the packets of the
//! streams that are copied.

use ffmpeg_next::Packet;
use rave_core::error::Result;

use super::{CopiedPacket, KeyframeIndex, LOOKAHEAD_PACKETS, VideoReader};
use crate::audio_check::AudioCheck;
use crate::picture_coding::ReorderEvidence;
use crate::sys;

impl VideoReader {
    /// Stop decoding and read the rest of the file's packets only, counting them, so that
    /// the damage report covers the whole file; stops early when `keep_going` says so.
    /// Frames already in the decoder are drained and counted, not passed on.
    pub fn scan_to_end(&mut self, keep_going: impl Fn() -> bool) -> Result<()> {
        self.scan_packets(keep_going, |_, _, _| {})
    }

    /// Read every packet of the file without decoding the video (the reader must be fresh),
    /// counting them like `scan_to_end`, and return the index of its video frames and
    /// keyframes. The audio streams are decoded on the way (`AudioCheck`): damage inside the
    /// audio RAVE copies is counted too.
    pub fn index_to_end(&mut self, keep_going: impl Fn() -> bool) -> Result<KeyframeIndex> {
        let mut index = KeyframeIndex::new(self.time_base(), self.frame_rate());
        let video = self.video_index();
        let params = sys::stream_params(self.input(), video);
        let declared_reorder = params.video_delay > 0;
        let mut evidence = ReorderEvidence::for_codec(params.codec_id.into());
        let audio = AudioCheck::start(self.input());
        // Leading packets (before the first keyframe of a file that starts mid-GOP, or the
        // leading pictures of its open GOP) are no frames of the job: no segment decodes
        // them. Held until a keyframe shows they are (as the ledger counts them); a stream
        // without any keyframe flag keeps them all.
        let mut before_key = Vec::new();
        let mut parts = 0;
        self.scan_packets(&keep_going, |packet, leading, restarts| {
            if restarts > parts {
                parts = restarts;
                audio.part_starts();
            }
            if packet.stream() != video {
                audio.feed(packet);
                return;
            }
            evidence.add(packet.data().unwrap_or_default());
            let entry = (
                (packet.pts(), packet.dts()),
                packet.is_key(),
                sys::packet_is_discarded(packet),
            );
            match leading {
                false => index.add(entry.0, entry.1, entry.2),
                true => before_key.push(entry),
            }
        })?;
        if !self.ledger.keyframe_read() {
            for (times, key, discarded) in before_key {
                index.add(times, key, discarded);
            }
        }
        let verdict = audio.finish();
        if keep_going() {
            self.ledger.on_audio_check(verdict);
        }
        index.set_reorders(evidence.reorders(declared_reorder));
        index.finish(self.demuxer.timestamp_resets().len() + self.demuxer.timestamp_steps().len());
        Ok(index)
    }

    fn scan_packets(
        &mut self,
        keep_going: impl Fn() -> bool,
        mut on_packet: impl FnMut(&Packet, bool, usize),
    ) -> Result<()> {
        self.ledger.on_scan();
        self.decoder.send_eof();
        while !self.finished && keep_going() {
            self.receive_frames()?;
            self.pending.clear();
            self.leading = 0;
        }
        // The frames held to be placed are counted too.
        self.place_decoded(true);
        self.pending.clear();
        self.leading = 0;
        self.finished = true;
        while keep_going() {
            let Some(packet) = self.next_packet() else {
                break;
            };
            if packet.stream() == self.video_index() {
                self.stats.packets += 1;
            }
            self.ledger.admit(&packet);
            let restarts = self.demuxer.timestamp_resets().len();
            on_packet(&packet, self.ledger.leading_packet(), restarts);
        }
        Ok(())
    }

    /// The next packet of a copied stream (audio, subtitles, attachments), reading past the
    /// video without decoding it; `None` at the end of the file. Each packet is counted in
    /// the ledger, and one no muxer could store (its timestamps go backwards) is skipped.
    pub fn next_copied_packet(&mut self) -> Option<CopiedPacket> {
        if let Some(peeked) = self.peeked.pop_front() {
            return Some(peeked);
        }
        loop {
            if let Some(copied) = self.read_for_copy()? {
                return Some(copied);
            }
        }
    }

    /// Where the streams whose start FFmpeg's start time gets wrong start
    /// (`IntegrityLedger::corrected_starts`: stream, time in its time base), for the output's
    /// timeline to start where the streams do (a first timestamp damaged and put back, an
    /// ASF video's first decode time), not where FFmpeg's start time says. The
    /// file is read ahead (the copied packets kept for [`VideoReader::next_copied_packet`])
    /// until every video and audio stream has started, [`LOOKAHEAD_PACKETS`] at most.
    pub fn corrected_starts(&mut self) -> Vec<(usize, i64)> {
        let mut read = 0;
        while read < LOOKAHEAD_PACKETS && !self.ledger.every_stream_started() {
            let Some(copied) = self.read_for_copy() else {
                break;
            };
            self.peeked.extend(copied);
            read += 1;
        }
        self.ledger.corrected_starts().to_vec()
    }

    /// The next packet of the file, counted in the ledger: a copied one where it is one the
    /// muxer can store, `Some(None)` for a video packet or one skipped; `None` at the end.
    fn read_for_copy(&mut self) -> Option<Option<CopiedPacket>> {
        let packet = self.next_packet()?;
        let admitted = self.ledger.admit(&packet);
        if packet.stream() == self.video_index() {
            self.stats.packets += 1;
            return Some(None);
        }
        if !admitted {
            return Some(None);
        }
        self.stats.copied_packets += 1;
        Some(Some(CopiedPacket {
            input_stream: packet.stream(),
            packet,
        }))
    }
}
