//! `MediaWriter`: a `VideoEncoder` feeding a `Muxer` that writes one segment file: the video
//! alone, encoded exactly as the final file needs it (so segments join without re-encoding).

use std::path::Path;

use ffmpeg_next::Rational;
use rave_core::codec::FrameSink;
use rave_core::error::Result;
use rave_core::frame::HostYuvFrame;
use serde::Serialize;

use crate::carried_metadata::CarriedMetadata;
use crate::codec_choice::{Container, EncoderSettings};
use crate::cuda_surfaces::{CudaSurface, CudaSurfacePool};
use crate::encoder::{EncoderGeometry, VideoEncoder};
use crate::encoder_limits;
use crate::muxer::{Muxer, OutputDescription, VideoStreamSpec};
use crate::nvenc_encoder::NvencEncoder;
use crate::nvenc_settings::NvencConfig;
use crate::reader::VideoReader;
use crate::stream_plan::{self, PlannedVideo};
use crate::sys;

/// What the writer did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WriterSummary {
    /// Frames encoded.
    pub frames_encoded: u64,
    /// Video packets written.
    pub video_packets: u64,
    /// Packets of other streams copied.
    pub copied_packets: u64,
    /// Packets of other streams the muxer refused as invalid (damaged input), left out.
    pub refused_packets: u64,
    /// Why the first of them was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_refusal: Option<String>,
    /// Packets of other streams read and left out because they start after the output's
    /// last video frame ends (an interrupted run, `--max-frames`); packets past the point
    /// where reading stopped are not read, so not counted.
    pub trimmed_packets: u64,
    /// Subtitle cues left out because they end before the picture starts.
    pub cues_before_picture: u64,
    /// Chapters left out because they end before the picture starts (a timeline moved to
    /// start at zero whose chapters lie before its first frame).
    pub chapters_before_picture: u64,
    /// Packets of other streams the source's edit list hides (an MP4 trimmed with stream
    /// copy), left out of a Matroska output, which has no edit list to hide them.
    pub hidden_packets: u64,
    /// Input streams copied, by index.
    pub copied_streams: Vec<usize>,
    /// Input streams left out, with the reason.
    pub skipped_streams: Vec<String>,
    /// The encoder used.
    pub encoder: String,
    /// What the output could not keep of the input (rotation in Matroska, interlacing),
    /// one sentence each; the caller shows them to the user.
    pub warnings: Vec<String>,
}

/// The encoder of a segment: software from host frames, or NVENC from CUDA surfaces.
enum SegmentEncoder {
    Software(VideoEncoder),
    Nvenc(NvencEncoder),
}

impl SegmentEncoder {
    fn context(&self) -> &ffmpeg_next::encoder::video::Encoder {
        match self {
            SegmentEncoder::Software(e) => e.context(),
            SegmentEncoder::Nvenc(e) => e.context(),
        }
    }

    fn time_base(&self) -> Rational {
        match self {
            SegmentEncoder::Software(e) => e.time_base(),
            SegmentEncoder::Nvenc(e) => e.time_base(),
        }
    }

    fn receive(&mut self) -> Result<Option<ffmpeg_next::Packet>> {
        match self {
            SegmentEncoder::Software(e) => e.receive(),
            SegmentEncoder::Nvenc(e) => e.receive(),
        }
    }

    fn send_eof(&mut self) -> Result<()> {
        match self {
            SegmentEncoder::Software(e) => e.send_eof(),
            SegmentEncoder::Nvenc(e) => e.send_eof(),
        }
    }
}

/// NVENC for a segment: its configuration and the surfaces the postprocess kernel writes.
#[derive(Clone, Copy)]
pub struct NvencOutput<'a> {
    /// Encoder, options and surface format (`--crf`, `--preset`, bit depth mapped).
    pub config: &'a NvencConfig,
    /// The pool of CUDA surfaces (on RAVE's context) the frames arrive in.
    pub surfaces: &'a CudaSurfacePool,
}

/// An output file being written: the encoder and the muxer it feeds.
pub struct MediaWriter {
    encoder: SegmentEncoder,
    muxer: Muxer,
    finished: bool,
    /// The earliest timestamp of the frames sent.
    first_pts: Option<i64>,
    /// The reader's closed captions, where this encoder writes them.
    captions: Option<std::sync::Arc<crate::captions::CaptionStore>>,
}

/// Open the encoder for `reader`'s video upscaled to `width` x `height`, as `container`
/// needs it, after refusing what the encoder or the container cannot take: the software
/// encoder of `settings`, or NVENC on `nvenc`'s surfaces.
fn open_encoder(
    container: Container,
    reader: &VideoReader,
    settings: &EncoderSettings,
    (width, height): (u32, u32),
    shown_as: &Path,
    nvenc: Option<NvencOutput<'_>>,
) -> Result<(SegmentEncoder, Rational)> {
    let input = reader.input();
    let vidx = reader.video_index();
    let (in_w, in_h) = reader.size();
    encoder_limits::check_output_size(settings.codec, (in_w, in_h), width / in_w.max(1))?;
    let planned = PlannedVideo {
        codec: settings.codec,
        width,
        height,
        bit_depth: nvenc.map_or(reader.color().bit_depth, |n| n.config.output_bits),
        time_base: reader.time_base(),
    };
    stream_plan::check_video(container, planned, shown_as)?;
    let carried = CarriedMetadata::of(input, vidx, container);
    let raw = sys::stream_params(input, vidx);
    let rate = nominal_frame_rate(reader);
    let geometry = EncoderGeometry {
        width,
        height,
        bit_depth: planned.bit_depth,
        time_base: planned.time_base,
        frame_rate: rate,
        sample_aspect: sys::sample_aspect_ratio(input, vidx),
    };
    // Every container RAVE writes keeps codec headers out of band (MP4, MOV, Matroska), and
    // segment files are encoded the same way so their packets join into any of them.
    let tags = crate::color::output_tags(raw, &reader.color());
    let encoder = match nvenc {
        Some(n) => SegmentEncoder::Nvenc(NvencEncoder::open(
            n.config, geometry, &tags, n.surfaces, true,
        )?),
        None => SegmentEncoder::Software(VideoEncoder::open(
            settings,
            geometry,
            &tags,
            true,
            &carried.encoder_params(settings.codec),
        )?),
    };
    Ok((encoder, rate))
}

/// The nominal frame rate the output's video is tagged with: the source's average rate, else
/// its base rate, else 25.
pub fn nominal_frame_rate(reader: &VideoReader) -> Rational {
    let in_video = reader
        .input()
        .stream(reader.video_index())
        .expect("reader's video stream");
    [in_video.avg_frame_rate(), in_video.rate()]
        .into_iter()
        .find(|r| r.numerator() > 0 && r.denominator() > 0)
        .unwrap_or(Rational::new(25, 1))
}

impl MediaWriter {
    /// Create the segment file `path`: `reader`'s video upscaled to `width` x `height`,
    /// encoded as the final output in `container` needs it, with no other stream (those are
    /// copied when the segments are assembled). Messages name `shown_as` (the user's output).
    /// What the encoder or the container cannot take is refused before anything is written.
    /// With `nvenc`, the frames arrive in its CUDA surfaces ([`MediaWriter::write_surface`]).
    #[allow(clippy::too_many_arguments)]
    pub fn create_segment(
        path: &Path,
        shown_as: &Path,
        container: Container,
        reader: &VideoReader,
        settings: &EncoderSettings,
        width: u32,
        height: u32,
        nvenc: Option<NvencOutput<'_>>,
    ) -> Result<Self> {
        crate::init();
        let (encoder, frame_rate) = open_encoder(
            container,
            reader,
            settings,
            (width, height),
            shown_as,
            nvenc,
        )?;
        let description = OutputDescription {
            container: None,
            video: VideoStreamSpec {
                parameters: ffmpeg_next::codec::Parameters::from(encoder.context()),
                codec: settings.codec,
                time_base: encoder.time_base(),
                frame_rate,
                sample_aspect: sys::sample_aspect_ratio(reader.input(), reader.video_index()),
            },
            source: None,
        };
        let mut muxer = Muxer::create(path, shown_as, &description)?;
        if let Some(n) = nvenc {
            muxer.set_encoder_name(n.config.encoder);
        }
        // libx264 writes closed captions handed to it with a frame; the others here cannot.
        let captions = matches!(&encoder, SegmentEncoder::Software(_))
            .then(|| reader.captions())
            .filter(|_| settings.codec == crate::codec_choice::VideoCodec::H264);
        if let Some(store) = &captions {
            store.keep();
        }
        Ok(Self {
            encoder,
            muxer,
            finished: false,
            first_pts: None,
            captions,
        })
    }

    /// What was written so far.
    pub fn summary(&self) -> &WriterSummary {
        self.muxer.summary()
    }

    /// Name `path` in write errors instead of the output (see `Muxer::name_write_errors`).
    pub fn name_write_errors(&mut self, path: &Path) {
        self.muxer.name_write_errors(path);
    }

    /// The earliest timestamp of the frames written (the encoder's time base).
    pub fn first_pts(&self) -> Option<i64> {
        self.first_pts
    }

    /// Encode a frame already in one of the NVENC surfaces (`pts` in the encoder's time
    /// base), with no host copy.
    pub fn write_surface(&mut self, mut surface: CudaSurface, pts: i64) -> Result<()> {
        let SegmentEncoder::Nvenc(encoder) = &mut self.encoder else {
            return Err(rave_core::error::EngineError::InvariantViolation(
                "a CUDA surface reached a software encoder".into(),
            ));
        };
        self.first_pts = Some(self.first_pts.map_or(pts, |p| p.min(pts)));
        surface.set_pts(pts);
        encoder.send(surface)?;
        self.muxer.count_frames(1);
        self.write_encoded()
    }

    fn write_encoded(&mut self) -> Result<()> {
        let tb = self.encoder.time_base();
        while let Some(packet) = self.encoder.receive()? {
            self.muxer.write_video(packet, tb)?;
        }
        Ok(())
    }
}

/// What became of a copied packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyOutcome {
    /// In the output.
    Written,
    /// Refused by the muxer as invalid, with what it said; not in the output.
    Refused(String),
}

impl FrameSink for MediaWriter {
    fn write_frame(&mut self, frame: HostYuvFrame) -> Result<()> {
        self.first_pts = Some(
            self.first_pts
                .map_or(frame.meta.pts, |p| p.min(frame.meta.pts)),
        );
        match &mut self.encoder {
            SegmentEncoder::Software(e) => {
                let captions = self.captions.as_ref().and_then(|c| c.take(frame.meta.pts));
                e.send(&frame, captions.as_deref())?
            }
            SegmentEncoder::Nvenc(_) => {
                return Err(rave_core::error::EngineError::InvariantViolation(format!(
                    "frame {}: a host frame reached the NVENC encoder",
                    frame.meta.index
                )));
            }
        }
        self.muxer.count_frames(1);
        self.write_encoded()
    }

    fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.encoder.send_eof()?;
        self.write_encoded()?;
        self.muxer.finish()
    }
}
