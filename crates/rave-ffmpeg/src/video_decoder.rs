//! `VideoDecoder`: the decoder of an input's main video stream, in software (frame threads)
//! or on NVDEC, turning packets into host frames or device surfaces of one fixed size.

use std::path::{Path, PathBuf};

use ffmpeg_next::codec::threading::{Config as Threading, Type as ThreadingType};
use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::util::error::EAGAIN;
use ffmpeg_next::{Packet, Rational};
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};

use crate::demuxer::Demuxer;
use crate::frame_convert::{FrameImporter, pixel_from_raw};
use crate::frame_times::FrameTimes;
use crate::log_watch::LogWatch;
use crate::nvdec::{CudaDevice, CudaFrame};
use crate::nvdec_route::{DecodeRoute, StreamShape};
use crate::reader::DecodedImage;
use crate::{color, sys};

/// What asking the decoder for a frame gave.
pub enum Received {
    /// A frame is ready in `VideoDecoder::frame`.
    Frame,
    /// The decoder needs more packets.
    Again,
    /// The decoder is drained.
    Eof,
    /// The decoder failed on what it was given.
    Error(ffmpeg_next::Error),
}

/// How the software decoder spreads over threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderThreads {
    /// Threads (0: FFmpeg's choice, one per core).
    pub count: usize,
    /// Threads decode slices of one picture only, never pictures side by side: frame
    /// threading conceals damage differently from run to run (what a damaged picture's
    /// concealment reads of its references depends on the threads' timing), slice
    /// threading the same way every time. For damaged inputs, whose counts and pictures
    /// must not change between runs of the same command.
    pub same_every_run: bool,
}

impl From<usize> for DecoderThreads {
    fn from(count: usize) -> Self {
        Self {
            count,
            same_every_run: false,
        }
    }
}

/// The opened decoder of one video stream.
pub struct VideoDecoder {
    path: PathBuf,
    decoder: ffmpeg_next::decoder::Video,
    importer: FrameImporter,
    color: ColorInfo,
    time_base: Rational,
    frame_rate: Rational,
    constant_rate: bool,
    decoded: VideoFrame,
    draining: bool,
    /// The size every frame must have (the output has one size).
    frame_size: (u32, u32),
    /// Why NVDEC was not used, where it was offered and the stream is decoded in software.
    nvdec_refused: Option<String>,
    times: FrameTimes,
}

impl VideoDecoder {
    /// Open the decoder of `demuxer`'s video stream, on NVDEC through `nvdec` when given and
    /// the device's NVDEC decodes the stream (up to `extra` decoded surfaces may be held
    /// downstream; FFmpeg's decoders other than AV1's still fall back to software for what
    /// NVDEC refuses once decoding), else in software on `threads` frame threads (0:
    /// FFmpeg's choice, one per core). Also returns the watch on the decoder's log.
    pub fn open(
        demuxer: &Demuxer,
        nvdec: Option<(&CudaDevice, i32)>,
        threads: DecoderThreads,
    ) -> Result<(Self, LogWatch)> {
        let path = demuxer.path();
        let input = demuxer.input();
        let video_index = demuxer.video_index();
        let stream = input.stream(video_index).expect("valid stream index");
        let params = stream.parameters();
        let codec_name = params.id().name().to_owned();
        let raw = sys::stream_params(input, video_index);
        let raw_format = pixel_from_raw(raw.format);
        let shape = StreamShape {
            codec: codec_name.clone(),
            bit_depth: crate::pixel_format::bit_depth(raw_format).unwrap_or(8),
            yuv420: crate::pixel_format::is_yuv420(raw_format),
            pixel_format: crate::pixel_format::name(raw_format),
            size: (raw.width.max(0) as u32, raw.height.max(0) as u32),
        };
        let route = nvdec.map(|(d, extra)| (d.route(&shape), d, extra));
        let (nvdec, by_name, nvdec_refused) = match route {
            Some((DecodeRoute::Nvdec(Some(name)), device, extra)) => {
                match ffmpeg_next::decoder::find_by_name(name) {
                    Some(codec) => (Some((device, extra)), Some(codec), None),
                    None => {
                        let why =
                            format!("this FFmpeg has no '{name}' decoder, the one NVDEC needs");
                        (None, None, Some(why))
                    }
                }
            }
            Some((DecodeRoute::Nvdec(None), device, extra)) => (Some((device, extra)), None, None),
            Some((DecodeRoute::Software(why), ..)) => (None, None, Some(why)),
            None => (None, None, None),
        };
        let mut ctx = ffmpeg_next::codec::context::Context::from_parameters(params)
            .map_err(|e| EngineError::Decode(e.to_string()))?;
        // SAFETY: `ctx` owns a valid, not yet opened codec context whose `opaque` RAVE
        // does not otherwise use.
        let log = unsafe { LogWatch::decoder(ctx.as_mut_ptr()) };
        match nvdec {
            // SAFETY: `ctx` owns a valid, not yet opened codec context.
            Some((device, extra)) => device.attach(unsafe { ctx.as_mut_ptr() }, extra)?,
            None => ctx.set_threading(Threading {
                kind: match threads.same_every_run {
                    true => ThreadingType::Slice,
                    false => ThreadingType::Frame,
                },
                count: threads.count,
                ..Default::default()
            }),
        }
        // The native AV1 decoder decodes only on the hardware: a failure to start NVDEC shows
        // as decode errors (`--decoder software` is then the way round).
        let opened = match by_name {
            Some(codec) => ctx.decoder().open_as(codec).and_then(|d| d.video()),
            None => ctx.decoder().video(),
        };
        let format = input.format().name().to_owned();
        let decoder = opened.map_err(|e| open_failure(e, (path, &format), &codec_name))?;
        let pix = ffmpeg_next::format::Pixel::from(raw_format);
        let color = color::resolve(raw.color_space, raw.color_range, pix, raw.height as u32);
        let rate = stream.avg_frame_rate();
        let frame_rate = if rate.numerator() > 0 {
            rate
        } else {
            stream.rate()
        };
        let constant_rate = stream.avg_frame_rate() == stream.rate() && frame_rate.numerator() > 0;
        let frame_size = (decoder.width(), decoder.height());
        let decoder = Self {
            path: path.to_path_buf(),
            decoder,
            importer: FrameImporter::new(color),
            color,
            time_base: stream.time_base(),
            frame_rate,
            constant_rate,
            decoded: VideoFrame::empty(),
            draining: false,
            frame_size,
            nvdec_refused,
            times: FrameTimes::new(crate::reader::frame_step(stream.time_base(), frame_rate)),
        };
        Ok((decoder, log))
    }

    /// The conversion colour description of the video.
    pub fn color(&self) -> ColorInfo {
        self.color
    }

    /// Time base of the frames' timestamps (the stream's).
    pub fn time_base(&self) -> Rational {
        self.time_base
    }

    /// The stream's nominal frame rate, and whether it is constant.
    pub fn frame_rate(&self) -> (Rational, bool) {
        (self.frame_rate, self.constant_rate)
    }

    /// Why this stream is decoded in software although NVDEC was offered.
    pub fn nvdec_refused(&self) -> Option<&str> {
        self.nvdec_refused.as_deref()
    }

    /// Threads the decoder was opened with (0: FFmpeg's choice).
    pub fn threads(&self) -> usize {
        self.decoder.threading().count
    }

    /// Coded size of the video.
    pub fn size(&self) -> (u32, u32) {
        self.frame_size
    }

    /// Whether end of stream was sent.
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// Send one packet; `Again` when the decoder's output must be taken first.
    pub fn send(&mut self, packet: &Packet) -> std::result::Result<(), ffmpeg_next::Error> {
        self.decoder.send_packet(packet)
    }

    /// Signal the end of the stream (once).
    pub fn send_eof(&mut self) {
        if !self.draining {
            self.draining = true;
            // An error here means the decoder was already flushed.
            let _ = self.decoder.send_eof();
        }
    }

    /// Drop every frame and reference the decoder holds (after a seek).
    pub fn flush(&mut self) {
        self.decoder.flush();
        self.draining = false;
        self.times = FrameTimes::new(self.times.frame_step());
    }

    /// Ask for the next frame; a frame of another size than the first is an error.
    pub fn receive(&mut self, index: u64) -> Result<Received> {
        match self.decoder.receive_frame(&mut self.decoded) {
            Ok(()) => {
                let size = (self.decoded.width(), self.decoded.height());
                if size != self.frame_size {
                    return Err(EngineError::Decode(format!(
                        "{}: the video changes size mid-stream at frame {index} ({}x{} -> {}x{}); RAVE writes one size per file: split the input where it changes (e.g. with ffmpeg -ss/-t) and upscale the parts",
                        self.path.display(),
                        self.frame_size.0,
                        self.frame_size.1,
                        size.0,
                        size.1
                    )));
                }
                Ok(Received::Frame)
            }
            Err(ffmpeg_next::Error::Eof) => Ok(Received::Eof),
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => Ok(Received::Again),
            Err(e) => Ok(Received::Error(e)),
        }
    }

    /// The frame `receive` just produced.
    pub fn frame(&self) -> &VideoFrame {
        &self.decoded
    }

    /// The time that places the frame just produced on the timeline (`FrameTimes`); once
    /// per frame.
    pub fn frame_time(&mut self) -> Option<i64> {
        let frame = &self.decoded;
        let dts = Some(frame.packet().dts).filter(|&d| d != ffmpeg_next::ffi::AV_NOPTS_VALUE);
        self.times.pick(frame.pts(), dts, frame.timestamp())
    }

    /// Whether the decoder flagged the frame just produced as damaged.
    pub fn frame_is_damaged(&self) -> bool {
        // SAFETY: `decoded` wraps a valid AVFrame just filled by the decoder.
        sys::frame_is_damaged(unsafe { self.decoded.as_ptr() })
    }

    /// The pixels of the frame just produced: a reference to its NVDEC surface, or a host
    /// copy; says which through the variant.
    pub fn take_image(&mut self) -> Result<DecodedImage> {
        // SAFETY: `decoded` wraps a valid AVFrame just filled by the decoder.
        Ok(
            match unsafe { CudaFrame::reference(self.decoded.as_ptr()) } {
                Some(surface) => DecodedImage::Cuda(surface),
                None => DecodedImage::Host(self.importer.import(&self.decoded)?),
            },
        )
    }

    /// The file being decoded.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Why the decoder of `codec_name` for `path` (demuxed as `format`) did not open: a codec
/// this FFmpeg has no decoder for (convert the file; or, where the container's structure is
/// damaged, the codec's name is what the damage hit), or a decoder that exists but did not
/// start (out of memory or threads, say: no reason to convert the file).
fn open_failure(
    e: ffmpeg_next::Error,
    (path, format): (&Path, &str),
    codec_name: &str,
) -> EngineError {
    match e {
        ffmpeg_next::Error::DecoderNotFound => EngineError::UnsupportedCodec {
            path: path.to_path_buf(),
            reason: if codec_name == "none" {
                let unknown = "its video codec is not one FFmpeg recognises";
                crate::input::structure_damage(path, format, unknown).unwrap_or_else(|| {
                    format!("{unknown}; convert the file to H.264/HEVC/AV1 first")
                })
            } else {
                format!(
                    "video codec '{codec_name}' has no decoder in this FFmpeg build; convert the file to H.264/HEVC/AV1 first"
                )
            },
        },
        other => EngineError::Decode(format!(
            "{}: the '{codec_name}' decoder did not start: {other}",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_decoder_says_to_convert_the_file() {
        let path = Path::new("in.mkv");
        let missing = open_failure(
            ffmpeg_next::Error::DecoderNotFound,
            (path, "matroska"),
            "h264",
        );
        assert_eq!(missing.code(), 304);
        assert!(
            missing.to_string().contains("convert the file"),
            "{missing}"
        );
        let no_memory = ffmpeg_next::Error::Other {
            errno: ffmpeg_next::util::error::ENOMEM,
        };
        let failed = open_failure(no_memory, (path, "matroska"), "h264");
        let text = failed.to_string();
        assert!(
            text.contains("in.mkv: the 'h264' decoder did not start: Cannot allocate memory"),
            "{text}"
        );
        assert!(!text.contains("convert"), "{text}");
    }
}
