//! `MediaWriter`: the output file. Encodes the upscaled video and muxes it with every audio,
//! subtitle and attachment stream of the input copied untouched, plus chapters, metadata,
//! rotation, HDR10 and colour tags; timestamps pass through unchanged.

use std::path::{Path, PathBuf};

use ffmpeg_next::Rational;
use ffmpeg_next::Rescale;
use ffmpeg_next::format::context::Output;
use rave_core::codec::FrameSink;
use rave_core::error::{EngineError, Result};
use rave_core::frame::HostYuvFrame;
use serde::Serialize;

use crate::carried_metadata::CarriedMetadata;
use crate::codec_choice::{Container, EncoderSettings, VideoCodec};
use crate::encoder::{EncoderGeometry, VideoEncoder};
use crate::encoder_limits;
use crate::reader::{CopiedPacket, VideoReader};
use crate::stream_plan::{self, PlannedVideo};
use crate::sys;

/// Where each copied input stream goes: output index and both time bases.
#[derive(Debug, Clone, Copy)]
struct StreamRoute {
    output: usize,
    input_tb: Rational,
    output_tb: Rational,
    /// Added to timestamps after rescaling (output time base); see `codec_delay_offset`.
    offset: i64,
    /// The last decode timestamp written (output time base).
    last_dts: Option<i64>,
}

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
    /// Packets of other streams left out of an interrupted run's file because they start
    /// after its last video frame ends.
    pub trimmed_packets: u64,
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

/// An output file being written.
pub struct MediaWriter {
    /// The path messages name (the user's, not the temporary file's).
    shown_as: PathBuf,
    output: Output,
    encoder: VideoEncoder,
    video_tb: Rational,
    routes: Vec<Option<StreamRoute>>,
    /// The muxer needs strictly increasing decode timestamps (MP4/MOV; Matroska takes equal
    /// ones).
    strict_dts: bool,
    /// Where the last encoded frame ends, in seconds of the input's timeline.
    video_end_s: f64,
    /// The video's nominal frame rate (for the length of the last frame).
    frame_rate: Rational,
    summary: WriterSummary,
    finished: bool,
}

impl MediaWriter {
    /// Create `path` as `container`, mirroring `reader`'s streams, and open the encoder for
    /// frames of `width` x `height`. Messages name `shown_as` (the path the user asked for;
    /// `path` may be a temporary file beside it). Everything the container cannot hold is
    /// refused before the encoder is opened or anything is written.
    pub fn create(
        path: &Path,
        shown_as: &Path,
        container: Container,
        reader: &VideoReader,
        settings: &EncoderSettings,
        width: u32,
        height: u32,
    ) -> Result<Self> {
        crate::init();
        let input = reader.input();
        let unwritable = |reason: String| EngineError::OutputUnwritable {
            path: shown_as.to_path_buf(),
            reason,
        };
        let vidx = reader.video_index();
        let (in_w, in_h) = reader.size();
        encoder_limits::check_output_size(settings.codec, (in_w, in_h), width / in_w.max(1))?;
        let planned = PlannedVideo {
            codec: settings.codec,
            width,
            height,
            bit_depth: reader.color().bit_depth,
            time_base: reader.time_base(),
        };
        stream_plan::check_video(container, planned, shown_as)?;
        let plan = stream_plan::plan_streams(input, vidx, container, shown_as)?;
        let carried = CarriedMetadata::of(input, vidx, container);

        let mut output = ffmpeg_next::format::output_as(&path, container.muxer())
            .map_err(|e| unwritable(e.to_string()))?;
        let in_video = input.stream(vidx).expect("reader's video stream");
        let raw = sys::stream_params(input, vidx);
        let rate = [in_video.avg_frame_rate(), in_video.rate()]
            .into_iter()
            .find(|r| r.numerator() > 0 && r.denominator() > 0)
            .unwrap_or(Rational::new(25, 1));
        let geometry = EncoderGeometry {
            width,
            height,
            bit_depth: planned.bit_depth,
            time_base: planned.time_base,
            frame_rate: rate,
            sample_aspect: Rational::new(
                raw.sample_aspect_ratio.num,
                raw.sample_aspect_ratio.den.max(1),
            ),
        };
        let global_header = sys::wants_global_header(&output);
        let encoder = VideoEncoder::open(
            settings,
            geometry,
            &crate::color::output_tags(raw, &reader.color()),
            global_header,
            &carried.encoder_params(settings.codec),
        )?;

        // Stream 0: the upscaled video.
        {
            let mut ost = output
                .add_stream(ffmpeg_next::encoder::find_by_name(
                    settings.codec.encoder_name(),
                ))
                .map_err(|e| unwritable(e.to_string()))?;
            ost.set_parameters(encoder.context());
            ost.set_time_base(encoder.time_base());
            ost.set_avg_frame_rate(rate);
            ost.set_metadata(in_video.metadata().to_owned());
        }
        sys::copy_disposition(input, vidx, &mut output, 0);
        let hevc_in_mp4 = settings.codec == VideoCodec::Hevc && container != Container::Matroska;
        sys::set_codec_tag(
            &mut output,
            0,
            if hevc_in_mp4 { fourcc(b"hvc1") } else { 0 },
        );
        carried.apply(&mut output, 0);

        // Every other stream the plan keeps, copied.
        let mut routes = vec![None; input.nb_streams() as usize];
        let mut summary = WriterSummary {
            encoder: settings.codec.encoder_name().into(),
            skipped_streams: plan.skipped,
            warnings: carried.warnings,
            ..Default::default()
        };
        for &idx in &plan.copied {
            let ist = input.stream(idx).expect("planned stream");
            let out_index = {
                let mut ost = output
                    .add_stream(ffmpeg_next::encoder::find(ffmpeg_next::codec::Id::None))
                    .map_err(|e| unwritable(e.to_string()))?;
                ost.set_parameters(ist.parameters());
                ost.set_time_base(ist.time_base());
                ost.set_metadata(ist.metadata().to_owned());
                ost.index()
            };
            sys::set_codec_tag(&mut output, out_index, 0);
            sys::copy_disposition(input, idx, &mut output, out_index);
            routes[idx] = Some(StreamRoute {
                output: out_index,
                input_tb: ist.time_base(),
                output_tb: ist.time_base(),
                offset: 0,
                last_dts: None,
            });
            summary.copied_streams.push(idx);
        }

        for ch in input.chapters() {
            let title = ch.metadata().get("title").unwrap_or("").to_owned();
            output
                .add_chapter(ch.id(), ch.time_base(), ch.start(), ch.end(), &title)
                .map_err(|e| unwritable(format!("chapter {}: {e}", ch.id())))?;
        }
        output.set_metadata(input.metadata().to_owned());
        let mut header_options = ffmpeg_next::Dictionary::new();
        if container == Container::Matroska {
            // Matroska stores codec delay (Opus pre-skip) itself; FFmpeg's default shift to
            // non-negative timestamps would move the video by that delay on every pass.
            header_options.set("avoid_negative_ts", "disabled");
        }
        output
            .write_header_with(header_options)
            .map_err(|e| unwritable(format!("cannot write the container header: {e}")))?;

        // The muxer may have picked its own time bases.
        let video_tb = output.stream(0).expect("stream 0").time_base();
        for (idx, slot) in routes.iter_mut().enumerate() {
            if let Some(route) = slot {
                let tb = output
                    .stream(route.output)
                    .expect("added stream")
                    .time_base();
                route.output_tb = tb;
                route.offset = codec_delay_offset(input, idx, container, tb);
            }
        }
        let strict_dts = sys::muxer_wants_strict_dts(&output);
        Ok(Self {
            shown_as: shown_as.to_path_buf(),
            output,
            encoder,
            video_tb,
            routes,
            strict_dts,
            video_end_s: f64::NEG_INFINITY,
            frame_rate: rate,
            summary,
            finished: false,
        })
    }

    /// Write a packet of a copied stream, unchanged but for its timestamps' time base. A
    /// packet the muxer refuses as invalid (damaged data: a broken header a bitstream filter
    /// cannot parse, timestamps it cannot store) is left out and reported as `Refused`;
    /// other failures are output errors.
    pub fn copy_packet(&mut self, copied: CopiedPacket) -> Result<CopyOutcome> {
        let Some(route) = self.routes.get(copied.input_stream).copied().flatten() else {
            return Ok(CopyOutcome::Written);
        };
        let at_s = Some(self.packet_start_s(&copied))
            .filter(|t| t.is_finite())
            .unwrap_or(0.0);
        let mut packet = copied.packet;
        packet.rescale_ts(route.input_tb, route.output_tb);
        if route.offset != 0 {
            packet.set_pts(packet.pts().map(|t| t + route.offset));
            packet.set_dts(packet.dts().map(|t| t + route.offset));
        }
        // Two packets sharing a rounded timestamp: one tick later for a muxer that needs
        // them strictly increasing.
        if let (Some(dts), Some(last)) = (packet.dts(), route.last_dts)
            && self.strict_dts
            && dts <= last
        {
            packet.set_dts(Some(last + 1));
            packet.set_pts(packet.pts().map(|p| p.max(last + 1)));
        }
        packet.set_stream(route.output);
        packet.set_position(-1);
        let dts = packet.dts();
        match packet.write_interleaved(&mut self.output) {
            Ok(()) => {
                if let Some(Some(r)) = self.routes.get_mut(copied.input_stream) {
                    r.last_dts = dts.or(r.last_dts);
                }
                self.summary.copied_packets += 1;
                Ok(CopyOutcome::Written)
            }
            Err(e) if is_invalid_data(&e) => {
                let why = format!(
                    "stream #{}: the packet at {at_s:.3} s cannot be stored ({e})",
                    copied.input_stream
                );
                self.summary.refused_packets += 1;
                self.summary
                    .first_refusal
                    .get_or_insert_with(|| why.clone());
                Ok(CopyOutcome::Refused(why))
            }
            Err(e) => Err(self.mux_error(e)),
        }
    }

    /// Where the frames sent to the encoder so far end, in seconds of the input's timeline
    /// (minus infinity before the first).
    pub fn video_end_s(&self) -> f64 {
        self.video_end_s
    }

    /// Where a copied packet starts, in seconds of the input's timeline (minus infinity when
    /// it has no timestamp or its stream is not copied).
    pub fn packet_start_s(&self, copied: &CopiedPacket) -> f64 {
        let route = self.routes.get(copied.input_stream).copied().flatten();
        match (route, copied.packet.pts().or(copied.packet.dts())) {
            (Some(r), Some(t)) => t as f64 * f64::from(r.input_tb),
            _ => f64::NEG_INFINITY,
        }
    }

    /// `n` copied packets were left out of an interrupted run's file (they start after its
    /// last frame).
    pub fn count_trimmed(&mut self, n: u64) {
        self.summary.trimmed_packets += n;
    }

    /// What was written so far.
    pub fn summary(&self) -> &WriterSummary {
        &self.summary
    }

    fn mux_error(&self, e: ffmpeg_next::Error) -> EngineError {
        EngineError::Mux(format!("{}: writing failed: {e}", self.shown_as.display()))
    }

    fn write_encoded(&mut self) -> Result<()> {
        while let Some(mut packet) = self.encoder.receive()? {
            packet.set_stream(0);
            packet.rescale_ts(self.encoder.time_base(), self.video_tb);
            packet
                .write_interleaved(&mut self.output)
                .map_err(|e| self.mux_error(e))?;
            self.summary.video_packets += 1;
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

/// Whether a muxer error is about the packet's data or timestamps (not the output file).
fn is_invalid_data(e: &ffmpeg_next::Error) -> bool {
    matches!(e, ffmpeg_next::Error::InvalidData)
        || matches!(e, ffmpeg_next::Error::Other { errno } if *errno == ffmpeg_next::util::error::EINVAL)
}

/// Matroska's demuxer subtracts an Opus track's codec delay from its timestamps, but the
/// muxer does not add it back; add it here so copied Opus keeps its exact timestamps.
fn codec_delay_offset(
    input: &ffmpeg_next::format::context::Input,
    index: usize,
    container: Container,
    tb: Rational,
) -> i64 {
    let is_opus = input
        .stream(index)
        .is_some_and(|s| s.parameters().id() == ffmpeg_next::codec::Id::OPUS);
    if container != Container::Matroska || !is_opus {
        return 0;
    }
    sys::opus_pre_skip(input, index).rescale(Rational::new(1, 48_000), tb)
}

fn fourcc(tag: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*tag)
}

impl FrameSink for MediaWriter {
    fn write_frame(&mut self, frame: HostYuvFrame) -> Result<()> {
        let tb = f64::from(self.encoder.time_base());
        let rate = f64::from(self.frame_rate);
        let end = frame.meta.pts as f64 * tb + if rate > 0.0 { 1.0 / rate } else { 0.0 };
        self.video_end_s = self.video_end_s.max(end);
        self.encoder.send(&frame)?;
        self.summary.frames_encoded += 1;
        self.write_encoded()
    }

    fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.encoder.send_eof()?;
        self.write_encoded()?;
        self.output.write_trailer().map_err(|e| self.mux_error(e))
    }
}
