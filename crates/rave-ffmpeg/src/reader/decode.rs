//! Decoding a `VideoReader`'s video: packets to the decoder (only those within the
//! segment's bounds), frames out with their place on the timeline (each once the few
//! decoded after it show whether its timestamp is in line), untimed leading frames held
//! until a timed one says where they go.

use ffmpeg_next::Packet;
use ffmpeg_next::util::error::EAGAIN;
use rave_core::codec::FrameSource;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};

use super::{DecodedFrame, DecodedImage, Unplaced, VideoReader};
use crate::sys;
use crate::timeline::{PLACING_LOOKAHEAD, Placement};
use crate::video_decoder::Received;

impl VideoReader {
    fn read_packet(&mut self) -> Result<()> {
        match self.next_packet() {
            Some(packet) => self.route(packet),
            None => {
                self.decoder.send_eof();
                Ok(())
            }
        }
    }

    /// Decode a video packet; a packet of another stream is only counted (the other streams
    /// are copied when the segments are assembled, by `next_copied_packet`).
    fn route(&mut self, packet: Packet) -> Result<()> {
        if packet.stream() != self.video_index() {
            // After a seek the other streams' first packets are wherever the seek landed
            // (an MPEG-PS audio packet may start before the one read last): no measure of
            // them. The plan's reading of the whole file checked them.
            if self.bounds.seek_to.is_none() {
                self.ledger.admit(&packet);
            }
            return Ok(());
        }
        self.ledger.admit(&packet);
        self.stats.packets += 1;
        if let Some(pts) = packet.pts()
            && self.bounds.start.is_none_or(|start| pts >= start)
            && self.bounds.end.is_none_or(|end| pts < end)
        {
            self.stats.packets_in_bounds += 1;
        }
        // After a seek too: a demuxer without an index lands where it can, maybe mid-GOP, and
        // the pictures before the first keyframe (and its leading ones) come before the
        // segment's start anyway.
        // A part joined mid-GOP: the decoder holds the part before's pictures, not the
        // ones its packets before its first keyframe refer to.
        let skip = self.bounds.skip_before_keyframe || self.bounds.seek_to.is_some();
        if (skip && self.ledger.leading_packet()) || self.ledger.part_leading_packet() {
            self.ledger.on_leading_skipped();
            return Ok(());
        }
        self.ledger.on_sent(sys::packet_is_discarded(&packet));
        match self.decoder.send(&packet) {
            Ok(()) => {}
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => {
                self.receive_frames()?;
                if let Err(e) = self.decoder.send(&packet) {
                    self.ledger.on_rejected(&e);
                }
            }
            Err(e) => self.ledger.on_rejected(&e),
        }
        self.receive_frames()
    }

    /// Whether the frame at `pts` is outside the bounds: before their start (a reference
    /// decoded on the way, dropped uncounted) or at their end (reading stops).
    fn outside_bounds(&mut self, pts: Option<i64>) -> Result<bool> {
        let b = self.bounds;
        if let (Some(end), Some(t)) = (b.end, pts)
            && t >= end
        {
            self.finished = true;
            return Ok(true);
        }
        let Some(start) = b.start else {
            return Ok(false);
        };
        if self.in_bounds {
            return Ok(false);
        }
        match pts {
            Some(t) if t == start => {
                // Errors the decoder logged on the references before the segment are not
                // the segment's.
                self.ledger.forget_decoder_errors();
                self.in_bounds = true;
                Ok(false)
            }
            Some(t) if t > start && self.bounds.seek_to.is_some() => {
                // The container's index sent the seek past the segment's first frame: decode
                // from the start of the file instead (slower, never wrong).
                self.demuxer.seek_video(i64::MIN)?;
                // Nothing read before the seek is handed out after it.
                self.ahead.clear();
                self.drained = false;
                self.decoder.flush();
                self.ledger.restart_leading();
                self.bounds.seek_to = None;
                self.unplaced.clear();
                self.pending.clear();
                self.leading = 0;
                Ok(true)
            }
            Some(t) if t > start => Err(EngineError::SeekMissed {
                path: self.path().to_path_buf(),
                wanted: start,
                got: t,
            }),
            _ => Ok(true),
        }
    }

    pub(super) fn receive_frames(&mut self) -> Result<()> {
        loop {
            if self.finished {
                return Ok(());
            }
            // The frame's index once the frames before it, held to be placed, have theirs.
            let index = self.next_index + self.unplaced.len() as u64;
            match self.decoder.receive(index)? {
                Received::Frame => {
                    let raw_pts = self.decoder.frame_time();
                    self.ledger.on_decoded(self.decoder.frame().is_key());
                    if self.outside_bounds(raw_pts)? {
                        continue;
                    }
                    let frame = self.decoder.frame();
                    let (damaged, interlaced) =
                        (self.decoder.frame_is_damaged(), frame.is_interlaced());
                    let (keyframe, captions) = (frame.is_key(), crate::captions::of_frame(frame));
                    self.unplaced.push_back(Unplaced {
                        raw_pts,
                        damaged,
                        interlaced,
                        keyframe,
                        captions,
                        image: self.decoder.take_image()?,
                    });
                    self.place_decoded(false);
                }
                Received::Eof => {
                    self.finished = true;
                    return Ok(());
                }
                Received::Again => return Ok(()),
                Received::Error(e) => {
                    self.ledger.on_rejected(&e);
                    if self.decoder.draining() {
                        self.finished = true;
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// Untimed first frames held for a timed one at most; beyond, they start the timeline at 0.
const MAX_LEADING: usize = 4;

impl VideoReader {
    /// Give the decoded frames their places on the timeline, each once
    /// [`PLACING_LOOKAHEAD`] frames decoded after it are known (all of them at the end,
    /// `all`), and queue them to be handed out; a duplicated frame is counted, not queued.
    pub(super) fn place_decoded(&mut self, all: bool) {
        while self.unplaced.len() > PLACING_LOOKAHEAD || (all && !self.unplaced.is_empty()) {
            let Some(frame) = self.unplaced.pop_front() else {
                return;
            };
            let later: Vec<Option<i64>> = self.unplaced.iter().map(|f| f.raw_pts).collect();
            let placed =
                (self.ledger).place_frame(frame.raw_pts, &later, frame.damaged, frame.interlaced);
            let pts = match placed {
                Placement::At(pts) => {
                    self.place_leading(Some(pts));
                    pts
                }
                Placement::Duplicate => continue,
                Placement::Leading => {
                    self.leading += 1;
                    0
                }
            };
            if frame.raw_pts != Some(pts) {
                self.stats.timestamp_fixes += 1;
            }
            if matches!(frame.image, DecodedImage::Cuda(_)) {
                self.stats.nvdec_frames += 1;
            }
            let meta = FrameMeta {
                index: self.next_index,
                pts,
                keyframe: frame.keyframe,
            };
            self.next_index += 1;
            self.stats.frames += 1;
            self.pending.push_back(DecodedFrame {
                meta,
                image: frame.image,
                captions: frame.captions,
            });
        }
    }

    /// Give the held leading frames their timestamps: one frame apart, ending a frame
    /// before `next` (the first timed frame's), or from 0 where none came.
    fn place_leading(&mut self, next: Option<i64>) {
        let n = std::mem::take(&mut self.leading);
        if n == 0 {
            return;
        }
        let step = self.ledger.frame_step();
        let first = next.map_or(0, |p| p - n as i64 * step);
        for (i, frame) in self.pending.iter_mut().take(n).enumerate() {
            frame.meta.pts = first + i as i64 * step;
        }
        if next.is_none() {
            self.ledger.settle_leading(first + (n as i64 - 1) * step);
        }
    }
}

impl FrameSource for VideoReader {
    fn next_frame(&mut self) -> Result<Option<HostYuvFrame>> {
        match self.next_decoded()? {
            None => Ok(None),
            Some(DecodedFrame {
                meta,
                image: DecodedImage::Host(image),
                ..
            }) => Ok(Some(HostYuvFrame { meta, image })),
            Some(_) => Err(EngineError::InvariantViolation(
                "an NVDEC frame reached the host-frame reader".into(),
            )),
        }
    }
}

impl VideoReader {
    /// The next decoded frame, wherever it lives; `None` at the end.
    pub fn next_decoded(&mut self) -> Result<Option<DecodedFrame>> {
        loop {
            if self.finished {
                self.place_decoded(true);
            }
            if self.leading > 0 && (self.finished || self.leading >= MAX_LEADING) {
                self.place_leading(None);
            }
            if self.leading == 0
                && let Some(mut frame) = self.pending.pop_front()
            {
                // Its timestamp is final now (leading frames get theirs late).
                if let Some(captions) = frame.captions.take() {
                    self.stats.captioned_frames += 1;
                    self.captions.put(frame.meta.pts, captions);
                }
                return Ok(Some(frame));
            }
            if self.finished {
                return Ok(None);
            }
            if self.decoder.draining() {
                self.receive_frames()?;
                if self.pending.is_empty() {
                    self.finished = true;
                }
            } else {
                self.read_packet()?;
            }
        }
    }
}
