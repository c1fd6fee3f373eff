//! The copied streams' packets (audio, subtitles) on their way to the writer: each is held
//! until the video written reaches its time, so an interrupted run's file ends its audio with
//! its last frame. A packet the muxer refuses as invalid is left out (the writer counts it)
//! with `--allow-corrupt`, else it stops the run as damaged input.

use std::collections::VecDeque;
use std::sync::mpsc::Receiver;

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::{CopiedPacket, CopyOutcome, MediaWriter};

/// The reader's packets of every copied stream, held per stream in timestamp order.
pub struct CopiedStreams {
    packets: Receiver<CopiedPacket>,
    allow_corrupt: bool,
    /// Per input stream: packets not written yet, with their start in seconds.
    pending: Vec<VecDeque<(f64, CopiedPacket)>>,
}

impl CopiedStreams {
    /// Packets from `packets`; `allow_corrupt` decides what a refused packet does.
    pub fn new(packets: Receiver<CopiedPacket>, allow_corrupt: bool) -> Self {
        Self {
            packets,
            allow_corrupt,
            pending: Vec::new(),
        }
    }

    /// Write the packets that start before the frames sent to the encoder end.
    pub fn write_up_to_video(&mut self, writer: &mut MediaWriter) -> Result<()> {
        let limit = writer.video_end_s();
        self.write(writer, Some(limit))
    }

    /// Write every packet (the video is complete).
    pub fn write_all(&mut self, writer: &mut MediaWriter) -> Result<()> {
        self.write(writer, None)
    }

    /// The run was interrupted: write what starts before its last frame ends, leave out
    /// (and count) the rest.
    pub fn leave_out_the_rest(&mut self, writer: &mut MediaWriter) -> Result<()> {
        self.write_up_to_video(writer)?;
        let rest: usize = self.pending.iter().map(VecDeque::len).sum();
        self.pending.clear();
        writer.count_trimmed(rest as u64);
        Ok(())
    }

    fn write(&mut self, writer: &mut MediaWriter, limit: Option<f64>) -> Result<()> {
        for packet in self.packets.try_iter() {
            let at = writer.packet_start_s(&packet);
            let stream = packet.input_stream;
            if self.pending.len() <= stream {
                self.pending.resize_with(stream + 1, VecDeque::new);
            }
            self.pending[stream].push_back((at, packet));
        }
        for queue in &mut self.pending {
            while queue
                .front()
                .is_some_and(|(at, _)| limit.is_none_or(|l| *at < l))
            {
                let (_, packet) = queue.pop_front().expect("front checked");
                match writer.copy_packet(packet)? {
                    CopyOutcome::Written => {}
                    CopyOutcome::Refused(_) if self.allow_corrupt => {}
                    CopyOutcome::Refused(why) => return Err(EngineError::PacketRefused(why)),
                }
            }
        }
        Ok(())
    }
}
