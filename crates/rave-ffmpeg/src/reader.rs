//! `VideoReader`: demuxes the input, decodes the main video stream in software into host
//! YUV frames (or NVDEC surfaces), hands every other stream's packets to the writer
//! untouched, and keeps the `IntegrityLedger` of what it read so damage is never hidden.

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
use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};
use serde::Serialize;

use crate::frame_convert::{FrameImporter, pixel_from_raw};
use crate::integrity::IntegrityLedger;
use crate::log_watch::LogWatch;
use crate::nvdec::{CudaDevice, CudaFrame};
use crate::splice::TimestampSplicer;
use crate::timeline::{Placement, VideoTimeline};
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

/// What decoding saw (damage is counted in `InputDamage`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DecodeStats {
    /// Video packets read.
    pub packets: u64,
    /// Frames decoded and passed on.
    pub frames: u64,
    /// Frames whose timestamp was missing or went backwards and was repaired.
    pub timestamp_fixes: u64,
    /// Packets of other streams passed to the writer.
    pub copied_packets: u64,
    /// Frames NVDEC decoded into device memory (the rest came from the software decoder).
    pub nvdec_frames: u64,
    /// Where (seconds into the output) the input's timestamps restarted and the timeline
    /// was continued across them (joined or spliced MPEG-TS/PS).
    pub timestamp_resets: Vec<f64>,
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
    ledger: IntegrityLedger,
    splicer: TimestampSplicer,
    /// Time base of each input stream.
    time_bases: Vec<Rational>,
    copy_sink: Option<Sender<CopiedPacket>>,
    pending: VecDeque<DecodedFrame>,
    decoded: VideoFrame,
    next_index: u64,
    draining: bool,
    finished: bool,
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
        Self::open_checked(path, nvdec, None)
    }

    /// Open this reader's file again, decoding on NVDEC through `nvdec` when given, without
    /// repeating the structure check (it reads a whole Matroska file).
    pub fn reopen_on(&self, nvdec: Option<(&CudaDevice, i32)>) -> Result<Self> {
        Self::open_checked(&self.path, nvdec, Some(self.ledger.structure()))
    }

    fn open_checked(
        path: &Path,
        nvdec: Option<(&CudaDevice, i32)>,
        structure: Option<Option<crate::structure_check::StructureProblem>>,
    ) -> Result<Self> {
        // Errors FFmpeg logs while opening (a track it cannot parse, say) are damage too.
        let (input, open_errors) = crate::capture_errors(|| input::open(path));
        let input = input?;
        let video_index = input::video_stream_index(&input, path)?;
        let stream = input.stream(video_index).expect("valid stream index");
        let params = stream.parameters();
        let codec_name = params.id().name().to_owned();
        let mut ctx = ffmpeg_next::codec::context::Context::from_parameters(params)
            .map_err(|e| EngineError::Decode(e.to_string()))?;
        // SAFETY: `ctx` owns a valid, not yet opened codec context whose `opaque` RAVE
        // does not otherwise use.
        let decoder_log = unsafe { LogWatch::decoder(ctx.as_mut_ptr()) };
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
        let constant_rate = stream.avg_frame_rate() == stream.rate() && rate.numerator() > 0;
        let timeline = VideoTimeline::new(frame_step(time_base, rate), constant_rate);
        let mut ledger = IntegrityLedger::new(&input, path, video_index, timeline, structure);
        ledger.watch_decoder(decoder_log);
        ledger.on_open_errors(open_errors);
        let time_bases: Vec<Rational> = input.streams().map(|s| s.time_base()).collect();
        let watched = input
            .streams()
            .map(|s| {
                use ffmpeg_next::media::Type;
                matches!(
                    s.parameters().medium(),
                    Type::Video | Type::Audio | Type::Subtitle
                )
            })
            .collect();
        let splicer = TimestampSplicer::new(watched, sys::timestamps_may_restart(&input));
        Ok(Self {
            path: path.to_path_buf(),
            video_index,
            importer: FrameImporter::new(color),
            color,
            time_base,
            ledger,
            splicer,
            time_bases,
            decoder,
            input,
            copy_sink: None,
            pending: VecDeque::new(),
            decoded: VideoFrame::empty(),
            next_index: 0,
            draining: false,
            finished: false,
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

    /// Whether damaged data has been seen so far.
    pub fn damage_seen(&self) -> bool {
        self.ledger.damage_seen()
    }

    /// What was lost or damaged. Once the input was read to its end (decoded, or scanned
    /// by `scan_to_end`), this includes what its container declares but was not there.
    pub fn damage(&self) -> InputDamage {
        self.ledger.damage(self.finished)
    }

    /// Count `n` packets the writer refused as invalid (damaged data); `first` says why.
    pub fn count_refused(&mut self, n: u64, first: Option<String>) {
        self.ledger.on_refused(n, first);
    }

    /// Whether a decoded frame was interlaced (the stream may not say so).
    pub fn saw_interlaced(&self) -> bool {
        self.ledger.saw_interlaced()
    }

    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stop decoding and read the rest of the file's packets only, counting them, so that
    /// the damage report covers the whole file; stops early when `keep_going` says so.
    /// Frames already in the decoder are drained and counted, not passed on.
    pub fn scan_to_end(&mut self, keep_going: impl Fn() -> bool) -> Result<()> {
        self.ledger.on_scan();
        self.start_draining();
        while !self.finished && keep_going() {
            self.receive_frames()?;
            self.pending.clear();
        }
        self.finished = true;
        while keep_going() {
            let Some(packet) = self.next_packet() else {
                break;
            };
            if packet.stream() == self.video_index {
                self.stats.packets += 1;
            }
            self.ledger.admit(&packet);
        }
        Ok(())
    }

    /// Stop forwarding packets (the writer is gone); decoding may go on.
    pub fn close_copy_sink(&mut self) {
        self.copy_sink = None;
    }

    /// The next packet, on the spliced timeline; `None` at the end of the file, or where the
    /// rest of it cannot be read (every read error counted).
    fn next_packet(&mut self) -> Option<Packet> {
        let mut errors = 0;
        loop {
            let mut packet = Packet::empty();
            match packet.read(&mut self.input) {
                Ok(()) => {
                    self.splice(&mut packet);
                    return Some(packet);
                }
                Err(ffmpeg_next::Error::Eof) => return None,
                Err(e) => {
                    self.ledger.on_read_error(&e);
                    errors += 1;
                    if errors >= MAX_CONSECUTIVE_READ_ERRORS {
                        return None;
                    }
                }
            }
        }
    }

    fn read_packet(&mut self) -> Result<()> {
        match self.next_packet() {
            Some(packet) => self.route(packet),
            None => {
                self.start_draining();
                Ok(())
            }
        }
    }

    /// Move a packet's timestamps across restarts of the input's timeline.
    fn splice(&mut self, packet: &mut Packet) {
        let Some(&tb) = self.time_bases.get(packet.stream()) else {
            return;
        };
        if let Some(at) = self.splicer.place(packet, tb) {
            self.stats.timestamp_resets.push(at);
        }
    }

    fn route(&mut self, packet: Packet) -> Result<()> {
        let admitted = self.ledger.admit(&packet);
        if packet.stream() != self.video_index {
            if admitted && let Some(sink) = &self.copy_sink {
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
        self.ledger.on_sent(sys::packet_is_discarded(&packet));
        match self.decoder.send_packet(&packet) {
            Ok(()) => {}
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => {
                self.receive_frames()?;
                if let Err(e) = self.decoder.send_packet(&packet) {
                    self.ledger.on_rejected(&e);
                }
            }
            Err(e) => self.ledger.on_rejected(&e),
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
                    let placed = self.ledger.place_frame(
                        self.decoded.timestamp(),
                        damaged,
                        self.decoded.is_interlaced(),
                    );
                    let Placement::At(pts) = placed else {
                        continue; // a duplicated frame: counted, not passed on
                    };
                    if self.decoded.timestamp() != Some(pts) {
                        self.stats.timestamp_fixes += 1;
                    }
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
                        pts,
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
                Err(e) => {
                    self.ledger.on_rejected(&e);
                    if self.draining {
                        self.finished = true;
                    }
                    return Ok(());
                }
            }
        }
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
