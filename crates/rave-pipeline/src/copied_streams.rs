//! The copied streams' packets (audio, subtitles) on their way into the assembled output:
//! read from the source as the video written reaches their time, and each held until then,
//! so an interrupted run's file ends its audio with its last frame. A packet the muxer
//! refuses as invalid is left out (the muxer counts it) with `--allow-corrupt`, else it stops
//! the assembly as damaged input.

use std::collections::VecDeque;

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::muxer::Muxer;
use rave_ffmpeg::{CopiedPacket, CopyOutcome};

/// How far past the video's end the source is read ahead (seconds): streams are interleaved
/// in the source only roughly.
const READ_AHEAD_S: f64 = 1.0;

/// Every copied stream's packets, held per stream in timestamp order.
pub struct CopiedStreams<F: FnMut() -> Result<Option<CopiedPacket>>> {
    source: F,
    exhausted: bool,
    /// Start of the last packet read (seconds).
    read_to_s: f64,
    allow_corrupt: bool,
    /// Per input stream: packets not written yet, with their start in seconds.
    pending: Vec<VecDeque<(f64, CopiedPacket)>>,
}

impl<F: FnMut() -> Result<Option<CopiedPacket>>> CopiedStreams<F> {
    /// Packets from `source` (the source's non-video packets in file order, `None` at its
    /// end); `allow_corrupt` decides what a refused packet does.
    pub fn new(source: F, allow_corrupt: bool) -> Self {
        Self {
            source,
            exhausted: false,
            read_to_s: f64::NEG_INFINITY,
            allow_corrupt,
            pending: Vec::new(),
        }
    }

    /// Write the packets that start before the video written so far ends.
    pub fn write_up_to_video(&mut self, muxer: &mut Muxer) -> Result<()> {
        let limit = muxer.video_end_s();
        self.write(muxer, Some(limit))
    }

    /// Write every packet (the video is complete).
    pub fn write_all(&mut self, muxer: &mut Muxer) -> Result<()> {
        self.write(muxer, None)
    }

    /// The video ended early (Ctrl+C, `--max-frames`): write what starts before its last
    /// frame ends, leave out (and count) the rest.
    pub fn leave_out_the_rest(&mut self, muxer: &mut Muxer) -> Result<()> {
        self.write_up_to_video(muxer)?;
        let rest: u64 = self.pending.iter().map(|q| q.len() as u64).sum();
        self.pending.clear();
        muxer.count_trimmed(rest);
        Ok(())
    }

    fn read_until(&mut self, muxer: &Muxer, limit: Option<f64>) -> Result<()> {
        while !self.exhausted && limit.is_none_or(|l| self.read_to_s < l + READ_AHEAD_S) {
            let Some(packet) = (self.source)()? else {
                self.exhausted = true;
                break;
            };
            let at = muxer.packet_start_s(&packet);
            if at.is_finite() {
                self.read_to_s = self.read_to_s.max(at);
            }
            let stream = packet.input_stream;
            if self.pending.len() <= stream {
                self.pending.resize_with(stream + 1, VecDeque::new);
            }
            self.pending[stream].push_back((at, packet));
        }
        Ok(())
    }

    fn write(&mut self, muxer: &mut Muxer, limit: Option<f64>) -> Result<()> {
        self.read_until(muxer, limit)?;
        for queue in &mut self.pending {
            while queue
                .front()
                .is_some_and(|(at, _)| limit.is_none_or(|l| *at < l))
            {
                let (_, packet) = queue.pop_front().expect("front checked");
                match muxer.copy_packet(packet)? {
                    CopyOutcome::Written => {}
                    CopyOutcome::Refused(_) if self.allow_corrupt => {}
                    CopyOutcome::Refused(why) => return Err(EngineError::PacketRefused(why)),
                }
            }
        }
        Ok(())
    }
}
