//! `VideoReader`: demuxes the input, decodes the main video stream in software into host
//! YUV frames, counts damaged data instead of hiding it, and hands every other stream's
//! packets to the writer untouched.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use ffmpeg_next::codec::threading::{Config as Threading, Type as ThreadingType};
use ffmpeg_next::format::context::Input;
use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::util::error::EAGAIN;
use ffmpeg_next::{Packet, Rational};
use rave_core::codec::FrameSource;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};
use serde::Serialize;

use crate::frame_convert::{FrameImporter, pixel_from_raw};
use crate::nvdec::{CudaDevice, CudaFrame};
use crate::{color, input, sys};

/// Consecutive demux errors after which the rest of the file is treated as unreadable.
const MAX_CONSECUTIVE_READ_ERRORS: u32 = 64;

/// A packet of a non-video stream, on its way to the writer unchanged.
pub struct CopiedPacket {
    /// Index of the stream in the input.
    pub input_stream: usize,
    /// The packet as demuxed.
    pub packet: Packet,
}

/// What decoding saw.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DecodeStats {
    /// Video packets read.
    pub packets: u64,
    /// Frames decoded.
    pub frames: u64,
    /// Packets the decoder rejected, frames it flagged as damaged, and unreadable stretches.
    pub bad_frames: u64,
    /// Video packets that produced no frame (the decoder dropped damaged data), counted at
    /// the end of a progressive stream.
    pub lost_frames: u64,
    /// Frames whose timestamp was missing or went backwards and was repaired.
    pub timestamp_fixes: u64,
    /// Packets of other streams passed to the writer.
    pub copied_packets: u64,
    /// Frames NVDEC decoded into device memory (the rest came from the software decoder).
    pub nvdec_frames: u64,
}

/// A decoded picture: in host memory (software decoder) or on the GPU (NVDEC).
pub enum DecodedImage {
    /// Planar 4:2:0 samples in host memory.
    Host(rave_core::frame::YuvFrame),
    /// An NVDEC surface in device memory.
    Cuda(CudaFrame),
}

/// A decoded frame with its identity.
pub struct DecodedFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub image: DecodedImage,
}

/// Demuxer plus software decoder for the main video stream of one file.
pub struct VideoReader {
    path: PathBuf,
    input: Input,
    video_index: usize,
    decoder: ffmpeg_next::decoder::Video,
    importer: FrameImporter,
    color: ColorInfo,
    time_base: Rational,
    frame_step: i64,
    constant_rate: bool,
    gap_frames: u64,
    copy_sink: Option<Sender<CopiedPacket>>,
    pending: VecDeque<DecodedFrame>,
    decoded: VideoFrame,
    next_index: u64,
    last_pts: Option<i64>,
    draining: bool,
    finished: bool,
    saw_interlaced: bool,
    stats: DecodeStats,
    /// The size every frame must have (the output has one size).
    frame_size: (u32, u32),
}

impl VideoReader {
    /// Open `path` and its main video stream's software decoder.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_on(path, None)
    }

    /// Open `path`, decoding on NVDEC through `device` when given (FFmpeg falls back to
    /// software for what NVDEC cannot take); up to `extra_frames` decoded surfaces may be held
    /// downstream at once.
    pub fn open_on(path: &Path, nvdec: Option<(&CudaDevice, i32)>) -> Result<Self> {
        let input = input::open(path)?;
        let video_index = input::video_stream_index(&input, path)?;
        let stream = input.stream(video_index).expect("valid stream index");
        let params = stream.parameters();
        let codec_name = params.id().name().to_owned();
        let mut ctx = ffmpeg_next::codec::context::Context::from_parameters(params)
            .map_err(|e| EngineError::Decode(e.to_string()))?;
        match nvdec {
            // SAFETY: `ctx` owns a valid, not yet opened codec context.
            Some((device, extra)) => device.attach(unsafe { ctx.as_mut_ptr() }, extra)?,
            None => ctx.set_threading(Threading {
                kind: ThreadingType::Frame,
                count: 0,
                ..Default::default()
            }),
        }
        let decoder = ctx
            .decoder()
            .video()
            .map_err(|_| EngineError::UnsupportedCodec {
                path: path.to_path_buf(),
                reason: if codec_name == "none" {
                    "its video codec is not one FFmpeg recognises; convert the file to H.264/HEVC/AV1 first".into()
                } else {
                    format!(
                        "video codec '{codec_name}' has no decoder in this FFmpeg build; convert the file to H.264/HEVC/AV1 first"
                    )
                },
            })?;
        let raw = sys::stream_params(&input, video_index);
        let pix = ffmpeg_next::format::Pixel::from(pixel_from_raw(raw.format));
        let color = color::resolve(raw.color_space, raw.color_range, pix, raw.height as u32);
        let time_base = stream.time_base();
        let rate = stream.avg_frame_rate();
        let rate = if rate.numerator() > 0 {
            rate
        } else {
            stream.rate()
        };
        let frame_size = (decoder.width(), decoder.height());
        Ok(Self {
            path: path.to_path_buf(),
            video_index,
            importer: FrameImporter::new(color),
            color,
            time_base,
            frame_step: frame_step(time_base, rate),
            constant_rate: stream.avg_frame_rate() == stream.rate() && rate.numerator() > 0,
            gap_frames: 0,
            decoder,
            input,
            copy_sink: None,
            pending: VecDeque::new(),
            decoded: VideoFrame::empty(),
            next_index: 0,
            last_pts: None,
            draining: false,
            finished: false,
            saw_interlaced: false,
            stats: DecodeStats::default(),
            frame_size,
        })
    }

    /// Send packets of every other stream to `sink` as they are demuxed.
    pub fn set_copy_sink(&mut self, sink: Sender<CopiedPacket>) {
        self.copy_sink = Some(sink);
    }

    /// The demuxer (for the writer to mirror streams, chapters and metadata).
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// Index of the decoded video stream.
    pub fn video_index(&self) -> usize {
        self.video_index
    }

    /// The conversion colour description of the video.
    pub fn color(&self) -> ColorInfo {
        self.color
    }

    /// Time base of the video stream's timestamps.
    pub fn time_base(&self) -> Rational {
        self.time_base
    }

    /// Coded size of the video.
    pub fn size(&self) -> (u32, u32) {
        (self.decoder.width(), self.decoder.height())
    }

    /// Counters so far.
    pub fn stats(&self) -> &DecodeStats {
        &self.stats
    }

    /// The error to report when damaged data was seen, or `None` when all decoded cleanly.
    pub fn damage_error(&self, hint: &str) -> Option<EngineError> {
        let bad = self.stats.bad_frames + self.stats.lost_frames;
        (bad > 0).then(|| EngineError::CorruptStream {
            path: self.path.clone(),
            bad_frames: bad,
            good_frames: self.stats.frames,
            hint: hint.to_owned(),
        })
    }

    /// Stop forwarding packets (the writer is gone); decoding may go on.
    pub fn close_copy_sink(&mut self) {
        self.copy_sink = None;
    }

    fn read_packet(&mut self) -> Result<()> {
        let mut errors = 0;
        loop {
            let mut packet = Packet::empty();
            match packet.read(&mut self.input) {
                Ok(()) => return self.route(packet),
                Err(ffmpeg_next::Error::Eof) => {
                    self.start_draining();
                    return Ok(());
                }
                Err(_) => {
                    errors += 1;
                    if errors >= MAX_CONSECUTIVE_READ_ERRORS {
                        // The rest of the file is unreadable: count it once, keep what decoded.
                        self.stats.bad_frames += 1;
                        self.start_draining();
                        return Ok(());
                    }
                }
            }
        }
    }

    fn route(&mut self, packet: Packet) -> Result<()> {
        if packet.stream() != self.video_index {
            if let Some(sink) = &self.copy_sink {
                let copied = CopiedPacket {
                    input_stream: packet.stream(),
                    packet,
                };
                if sink.send(copied).is_ok() {
                    self.stats.copied_packets += 1;
                }
            }
            return Ok(());
        }
        self.stats.packets += 1;
        if packet.is_corrupt() {
            self.stats.bad_frames += 1;
        }
        match self.decoder.send_packet(&packet) {
            Ok(()) => {}
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => {
                self.receive_frames()?;
                if self.decoder.send_packet(&packet).is_err() {
                    self.stats.bad_frames += 1;
                }
            }
            Err(_) => self.stats.bad_frames += 1,
        }
        self.receive_frames()
    }

    fn start_draining(&mut self) {
        if !self.draining {
            self.draining = true;
            // An error here means the decoder was already flushed.
            let _ = self.decoder.send_eof();
        }
    }

    fn receive_frames(&mut self) -> Result<()> {
        loop {
            match self.decoder.receive_frame(&mut self.decoded) {
                Ok(()) => {
                    let size = (self.decoded.width(), self.decoded.height());
                    if size != self.frame_size {
                        return Err(EngineError::Decode(format!(
                            "{}: the video changes size mid-stream at frame {} ({}x{} -> {}x{}); RAVE writes one size per file: split the input where it changes (e.g. with ffmpeg -ss/-t) and upscale the parts",
                            self.path.display(),
                            self.next_index,
                            self.frame_size.0,
                            self.frame_size.1,
                            size.0,
                            size.1
                        )));
                    }
                    // SAFETY: `decoded` wraps a valid AVFrame just filled by the decoder.
                    let damaged = sys::frame_is_damaged(unsafe { self.decoded.as_ptr() });
                    if damaged {
                        self.stats.bad_frames += 1;
                    }
                    self.saw_interlaced |= self.decoded.is_interlaced();
                    // SAFETY: as above.
                    let image = match unsafe { CudaFrame::reference(self.decoded.as_ptr()) } {
                        Some(surface) => {
                            self.stats.nvdec_frames += 1;
                            DecodedImage::Cuda(surface)
                        }
                        None => DecodedImage::Host(self.importer.import(&self.decoded)?),
                    };
                    let meta = FrameMeta {
                        index: self.next_index,
                        pts: self.frame_pts(),
                        keyframe: self.decoded.is_key(),
                    };
                    self.next_index += 1;
                    self.stats.frames += 1;
                    self.pending.push_back(DecodedFrame { meta, image });
                }
                Err(ffmpeg_next::Error::Eof) => {
                    self.finished = true;
                    return Ok(());
                }
                Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => {
                    return Ok(());
                }
                Err(_) => {
                    self.stats.bad_frames += 1;
                    if self.draining {
                        self.finished = true;
                    }
                    return Ok(());
                }
            }
        }
    }

    /// In a constant-rate stream, a jump of more than one frame between consecutive frames
    /// can mean the decoder dropped the frames in between. Containers often claim a constant
    /// rate for variable-rate video, so these gaps only count once the decoder has reported
    /// damage (see `count_lost_frames`).
    fn count_gap(&mut self, delta: i64) {
        let step = self.frame_step;
        if self.constant_rate && step > 1 && delta > step + step / 2 {
            self.gap_frames += ((delta + step / 2) / step - 1) as u64;
        }
    }

    /// Every packet of a progressive stream decodes to one frame; packets that produced none
    /// were dropped by the decoder as damaged. (Field-coded streams send two packets per
    /// frame, so they are left out of this count.)
    fn count_lost_frames(&mut self) {
        let unmatched = if self.saw_interlaced {
            0
        } else {
            self.stats.packets.saturating_sub(self.stats.frames)
        };
        let gaps = if self.stats.bad_frames > 0 {
            self.gap_frames
        } else {
            0
        };
        self.stats.lost_frames = unmatched.max(gaps);
    }

    /// The decoder's best-effort timestamp, repaired when missing or not increasing so the
    /// encoder always sees strictly increasing times.
    fn frame_pts(&mut self) -> i64 {
        let pts = match (self.decoded.timestamp(), self.last_pts) {
            (Some(p), Some(last)) if p > last => {
                self.count_gap(p - last);
                p
            }
            (Some(p), None) => p,
            (_, last) => {
                self.stats.timestamp_fixes += 1;
                last.map_or(0, |l| l + self.frame_step)
            }
        };
        self.last_pts = Some(pts);
        pts
    }
}

/// Duration of one frame in time-base units (at least 1).
fn frame_step(time_base: Rational, rate: Rational) -> i64 {
    if rate.numerator() <= 0 || time_base.numerator() <= 0 {
        return 1;
    }
    let step = (i64::from(time_base.denominator()) * i64::from(rate.denominator()))
        / (i64::from(time_base.numerator()) * i64::from(rate.numerator()));
    step.max(1)
}

impl FrameSource for VideoReader {
    fn next_frame(&mut self) -> Result<Option<HostYuvFrame>> {
        match self.next_decoded()? {
            None => Ok(None),
            Some(DecodedFrame {
                meta,
                image: DecodedImage::Host(image),
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
            if let Some(frame) = self.pending.pop_front() {
                return Ok(Some(frame));
            }
            if self.finished {
                self.count_lost_frames();
                return Ok(None);
            }
            if self.draining {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_step_in_time_base_units() {
        assert_eq!(frame_step(Rational::new(1, 1000), Rational::new(25, 1)), 40);
        assert_eq!(
            frame_step(Rational::new(1, 90000), Rational::new(30000, 1001)),
            3003
        );
        assert_eq!(frame_step(Rational::new(1, 25), Rational::new(25, 1)), 1);
        assert_eq!(frame_step(Rational::new(1, 25), Rational::new(0, 1)), 1);
    }
}
