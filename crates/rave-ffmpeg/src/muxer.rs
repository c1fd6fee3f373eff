//! `Muxer`: an output file built from an `OutputDescription`: the upscaled video stream (its
//! packets come from an encoder, or from finished segment files) and, when the description
//! names a source, every audio, subtitle and attachment stream of it copied untouched, plus
//! chapters, metadata, rotation, HDR10 and colour tags. Timestamps pass through unchanged,
//! except that a user's output is moved to start at zero where its input does not (see
//! `timeline_start_us`).

use std::path::{Path, PathBuf};

use ffmpeg_next::ffi::AV_TIME_BASE_Q;
use ffmpeg_next::format::context::{Input, Output};
use ffmpeg_next::{Packet, Rational, Rescale};
use rave_core::error::{EngineError, Result};

use crate::carried_metadata::CarriedMetadata;
use crate::closing_notes;
use crate::codec_choice::{Container, VideoCodec};
use crate::cover_attachment;
use crate::global_tags;
use crate::input::is_cover_art;
use crate::output_chapters::{self, seconds_in};
use crate::output_timeline;
use crate::packet_duration::DurationFill;
use crate::quicktime_language;
use crate::reader::CopiedPacket;
use crate::stream_plan;
use crate::sys;
use crate::writer::{CopyOutcome, WriterSummary};

/// FFmpeg's muxer for segment files: MP4 stores every packet's decode and
/// presentation timestamps explicitly in the stream's own time scale and the codec headers
/// out of band. It may shift a segment's timestamps as a whole (to start its decode times at
/// zero); the assembler moves them back by the segment's known first timestamp.
pub const SEGMENT_MUXER: &str = "mp4";

/// The video stream an output holds.
pub struct VideoStreamSpec {
    /// Codec parameters (from the opened encoder, or from a segment file's stream).
    pub parameters: ffmpeg_next::codec::Parameters,
    /// The codec (for the container's tags).
    pub codec: VideoCodec,
    /// Time base of the packets' timestamps.
    pub time_base: Rational,
    /// Nominal frame rate.
    pub frame_rate: Rational,
    /// The pixel aspect ratio (0/1 where unknown). AV1 has no place for it in the bitstream
    /// and a segment file's parameters do not carry the one its container holds: it is
    /// given here, for the output's container to hold.
    pub sample_aspect: Rational,
}

/// The input whose other streams, chapters, metadata and video tags an output carries.
#[derive(Clone, Copy)]
pub struct SourceStreams<'a> {
    /// The demuxed input.
    pub input: &'a Input,
    /// Its main video stream (replaced by the upscaled one).
    pub video_index: usize,
    /// Its path, whose file name the output's `RAVE_SOURCE` tag records (as a digest).
    pub path: &'a Path,
    /// Where the video ends when it stops before the source's (an interrupted run,
    /// `--max-frames`), in seconds of the source's timeline: chapters starting after it are
    /// left out, the last one and subtitle cues running past it end there.
    pub cut_at_s: Option<f64>,
    /// Streams whose start FFmpeg's start time gets wrong (a first timestamp damaged, an
    /// ASF video's decode times), and where each really starts (its time base;
    /// `VideoReader::corrected_starts`): the output's timeline starts by these.
    pub corrected_starts: &'a [(usize, i64)],
}

/// What an output file is made of.
pub struct OutputDescription<'a> {
    /// The user's container, or `None` for a video-only segment file.
    pub container: Option<Container>,
    /// The video stream.
    pub video: VideoStreamSpec,
    /// The source copied from (user outputs), or `None` (segment files).
    pub source: Option<SourceStreams<'a>>,
}

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
    /// A subtitle stream: a cue running past the cut ends there.
    subtitle: bool,
    /// Leave out the packets the source's edit list hides (all but the one before the
    /// start, the decoder's pre-roll): Matroska has no edit list, a player would play them.
    drop_hidden: bool,
    /// Packets of this stream stand alone (PCM, AC-3, E-AC-3): none is kept as pre-roll.
    no_preroll: bool,
}

/// An output file being written.
pub struct Muxer {
    /// The path messages name (the user's, not the temporary file's).
    shown_as: PathBuf,
    output: Output,
    video_tb: Rational,
    last_video_dts: Option<i64>,
    routes: Vec<Option<StreamRoute>>,
    /// Per input stream, the durations of a copied audio stream's packets that have none.
    durations: Vec<Option<DurationFill>>,
    /// The muxer needs strictly increasing decode timestamps (MP4/MOV; Matroska takes equal
    /// ones).
    strict_dts: bool,
    /// Where the video written so far ends, in seconds of the input's timeline.
    video_end_s: f64,
    /// How far the input's timeline is moved back in the output, in the video's output
    /// time base: the output starts at zero (see [`output_timeline::timeline_start_us`]).
    video_shift: i64,
    /// A segment file (no container asked for): its timestamps are moved to start at zero
    /// where they would start below it (see [`Muxer::write_video`]).
    segment_file: bool,
    frame_rate: Rational,
    /// See [`SourceStreams::cut_at_s`].
    cut_at_s: Option<f64>,
    summary: WriterSummary,
    finished: bool,
    /// Frames moved one tick later: they fell on the tick of the frame before them.
    moved_frames: u64,
    /// Subtitle cues that began before the picture, shortened to start with it.
    cues_shortened: u64,
    /// The file write errors name, where it is not `shown_as` (a segment's file).
    write_errors_as: Option<PathBuf>,
}

/// Whether an audio codec's packets decode on their own, with no pre-roll before them.
fn stands_alone(codec: ffmpeg_next::codec::Id) -> bool {
    use ffmpeg_next::codec::Id;
    matches!(codec, Id::AC3 | Id::EAC3) || codec.name().starts_with("pcm_")
}

/// Give output stream `index` the pixel aspect ratio `sar`, where it is known (not 0/1).
fn keep_sample_aspect_ratio(output: &mut Output, index: usize, sar: Rational) {
    if sar.numerator() > 0 && sar.denominator() > 0 {
        sys::set_sample_aspect_ratio(output, index, sar);
    }
}

impl Muxer {
    /// Create `path` as `description` says and write its header. Messages name `shown_as`
    /// (the path the user asked for; `path` may be a temporary file beside it). Everything
    /// the container cannot hold is refused before anything is written.
    pub fn create(
        path: &Path,
        shown_as: &Path,
        description: &OutputDescription<'_>,
    ) -> Result<Self> {
        crate::init();
        let unwritable = |reason: String| EngineError::OutputUnwritable {
            path: shown_as.to_path_buf(),
            reason,
        };
        let video = &description.video;
        let muxer = description
            .container
            .map_or(SEGMENT_MUXER, Container::muxer);
        let source = description
            .source
            .filter(|_| description.container.is_some());
        let plan = match (source, description.container) {
            (Some(src), Some(container)) => Some((
                stream_plan::plan_streams(src.input, src.video_index, container, shown_as)?,
                CarriedMetadata::of(src.input, src.video_index, container),
            )),
            _ => None,
        };
        let shift_us = match (source, &plan) {
            (Some(src), Some((plan, _))) => {
                let streams = (src.video_index, plan.copied.as_slice());
                output_timeline::timeline_start_us(src.input, streams, src.corrected_starts)
            }
            _ => 0,
        };
        let mut output =
            ffmpeg_next::format::output_as(&path, muxer).map_err(|e| unwritable(e.to_string()))?;
        // Languages QuickTime cannot name (said once the summary exists).
        let mut language_warnings = Vec::new();
        // Stream 0: the upscaled video.
        {
            let mut ost = output
                .add_stream(ffmpeg_next::encoder::find_by_name(
                    video.codec.encoder_name(),
                ))
                .map_err(|e| unwritable(e.to_string()))?;
            ost.set_parameters(video.parameters.clone());
            ost.set_time_base(video.time_base);
            ost.set_avg_frame_rate(video.frame_rate);
            if let Some(src) = source {
                let in_video = src.input.stream(src.video_index).expect("source video");
                let what = format!("the video (stream #{})", src.video_index);
                ost.set_metadata(quicktime_language::for_output(
                    in_video.metadata().to_owned(),
                    description.container,
                    &what,
                    &mut language_warnings,
                ));
            }
        }
        keep_sample_aspect_ratio(&mut output, 0, video.sample_aspect);
        let hevc_in_mp4 = video.codec == VideoCodec::Hevc
            && description
                .container
                .is_some_and(|c| c != Container::Matroska);
        sys::set_codec_tag(
            &mut output,
            0,
            if hevc_in_mp4 { fourcc(b"hvc1") } else { 0 },
        );
        let mut routes = Vec::new();
        let mut durations = Vec::new();
        let mut summary = WriterSummary {
            encoder: video.codec.encoder_name().into(),
            ..Default::default()
        };
        let container_is_matroska = description.container == Some(Container::Matroska);
        let mdta = match (source, description.container) {
            (Some(src), Some(container)) => global_tags::as_mdta_keys(src.input, container),
            _ => false,
        };
        if let (Some(src), Some((plan, carried))) = (source, plan) {
            let input = src.input;
            sys::copy_disposition(input, src.video_index, &mut output, 0);
            carried.apply(&mut output, 0);
            summary.skipped_streams = plan.skipped;
            summary.warnings = carried.warnings;
            routes = vec![None; input.nb_streams() as usize];
            durations = (0..input.nb_streams() as usize).map(|_| None).collect();
            let mut covers = 0;
            for &idx in &plan.copied {
                let ist = input.stream(idx).expect("planned stream");
                if container_is_matroska && is_cover_art(&ist) {
                    covers += 1;
                    cover_attachment::attach(&mut output, input, idx, covers)
                        .map_err(unwritable)?;
                    summary.copied_streams.push(idx);
                    continue;
                }
                let out_index = {
                    let mut ost = output
                        .add_stream(ffmpeg_next::encoder::find(ffmpeg_next::codec::Id::None))
                        .map_err(|e| unwritable(e.to_string()))?;
                    ost.set_parameters(ist.parameters());
                    ost.set_time_base(ist.time_base());
                    ost.set_metadata(quicktime_language::for_output(
                        ist.metadata().to_owned(),
                        description.container,
                        &format!("stream #{idx}"),
                        &mut language_warnings,
                    ));
                    ost.index()
                };
                sys::set_codec_tag(&mut output, out_index, 0);
                sys::copy_disposition(input, idx, &mut output, out_index);
                if ist.parameters().medium() == ffmpeg_next::media::Type::Video {
                    // A second video stream's ratio may be only its container's.
                    let sar = sys::sample_aspect_ratio(input, idx);
                    keep_sample_aspect_ratio(&mut output, out_index, sar);
                }
                routes[idx] = Some(StreamRoute {
                    output: out_index,
                    input_tb: ist.time_base(),
                    output_tb: ist.time_base(),
                    offset: 0,
                    last_dts: None,
                    subtitle: ist.parameters().medium() == ffmpeg_next::media::Type::Subtitle,
                    drop_hidden: container_is_matroska,
                    no_preroll: stands_alone(ist.parameters().id()),
                });
                durations[idx] = DurationFill::for_stream(&ist);
                summary.copied_streams.push(idx);
            }
            summary.warnings.append(&mut language_warnings);
            let (before_picture, said) =
                output_chapters::add(&mut output, input, shift_us, src.cut_at_s)
                    .map_err(unwritable)?;
            summary.chapters_before_picture = before_picture;
            summary.warnings.extend(said);
            output.set_metadata(global_tags::of(input, src.path, mdta));
        }
        let mut header_options = ffmpeg_next::Dictionary::new();
        if description.container.is_none() && video.time_base.numerator() == 1 {
            // Keep the source's time base as the track's time scale: no rounding.
            header_options.set(
                "video_track_timescale",
                &video.time_base.denominator().to_string(),
            );
        }
        if mdta {
            // A phone's QuickTime keys (location, make, model, creation date) are kept only
            // as `mdta` keys, the form the source holds them in: FFmpeg's default writes only
            // the iTunes-style tags it knows and drops them.
            header_options.set("movflags", "use_metadata_tags");
        }
        if description.container == Some(Container::Matroska) {
            // Matroska stores codec delay (Opus pre-skip) itself; FFmpeg's default shift to
            // non-negative timestamps would move the video by that delay on every pass.
            header_options.set("avoid_negative_ts", "disabled");
        }
        output
            .write_header_with(header_options)
            .map_err(|e| unwritable(format!("cannot write the container header: {e}")))?;

        // The muxer may have picked its own time bases.
        let video_tb = output.stream(0).expect("stream 0").time_base();
        if let (Some(src), Some(container)) = (source, description.container) {
            for (idx, slot) in routes.iter_mut().enumerate() {
                if let Some(route) = slot {
                    let tb = output
                        .stream(route.output)
                        .expect("added stream")
                        .time_base();
                    route.output_tb = tb;
                    route.offset =
                        output_timeline::codec_delay_offset(src.input, idx, container, tb)
                            - shift_us.rescale(AV_TIME_BASE_Q, tb);
                }
            }
        }
        let strict_dts = sys::muxer_wants_strict_dts(&output);
        Ok(Self {
            shown_as: shown_as.to_path_buf(),
            output,
            video_tb,
            last_video_dts: None,
            routes,
            durations,
            strict_dts,
            video_end_s: f64::NEG_INFINITY,
            video_shift: shift_us.rescale(AV_TIME_BASE_Q, video_tb),
            segment_file: description.container.is_none(),
            frame_rate: video.frame_rate,
            cut_at_s: source.and_then(|s| s.cut_at_s),
            summary,
            finished: false,
            moved_frames: 0,
            cues_shortened: 0,
            write_errors_as: None,
        })
    }

    /// Write a video packet whose timestamps are in `time_base`. Decode timestamps are kept
    /// increasing across the joins of segments (a later segment's first decode timestamp,
    /// moved back by its B-frame delay, may not pass the last one written); presentation
    /// timestamps are changed only where a frame shown as it is decoded falls on the tick
    /// of the frame before it (input frames closer than the output's time base resolves:
    /// 11 µs apart in a transport stream, one millisecond in Matroska): it goes one tick
    /// later, and the summary says so.
    pub fn write_video(&mut self, mut packet: Packet, time_base: Rational) -> Result<()> {
        let end = packet
            .pts()
            .map(|p| frame_end_s(p, time_base, self.frame_rate));
        packet.set_stream(0);
        packet.set_position(-1);
        packet.rescale_ts(time_base, self.video_tb);
        if self.segment_file && self.last_video_dts.is_none() {
            // FFmpeg's MP4 muxer takes negative decode times but writes the samples with
            // zero durations (an MPEG-TS whose timestamps all lie just before its clock
            // wraps reads as negative): a segment file starts at zero instead, and the join
            // puts its frames back where they were (`SegmentFile::restore_first_pts`).
            self.video_shift = packet
                .dts()
                .or(packet.pts())
                .filter(|&t| t < 0)
                .unwrap_or(0);
        }
        if self.video_shift != 0 {
            packet.set_pts(packet.pts().map(|t| t - self.video_shift));
            packet.set_dts(packet.dts().map(|t| t - self.video_shift));
        }
        if let (Some(dts), Some(last)) = (packet.dts(), self.last_video_dts)
            && dts <= last
        {
            let moved = last + 1;
            if packet.pts() == Some(dts) && dts == last {
                packet.set_pts(Some(moved));
                self.moved_frames += 1;
            } else if packet.pts().is_some_and(|p| p < moved) {
                return Err(EngineError::Mux(format!(
                    "{}: a video packet's decode time cannot follow the one before it (pts {:?}, dts {dts}, previous dts {last}); the segments do not join",
                    self.shown_as.display(),
                    packet.pts()
                )));
            }
            packet.set_dts(Some(moved));
        }
        self.last_video_dts = packet.dts().or(self.last_video_dts);
        if let Some(end) = end {
            self.video_end_s = self.video_end_s.max(end);
        }
        packet
            .write_interleaved(&mut self.output)
            .map_err(|e| self.mux_error(e))?;
        self.summary.video_packets += 1;
        Ok(())
    }

    /// Count `n` frames encoded into this file.
    pub fn count_frames(&mut self, n: u64) {
        self.summary.frames_encoded += n;
    }

    /// Name the encoder in the summary when it is not the codec's software encoder (NVENC).
    pub fn set_encoder_name(&mut self, name: &str) {
        self.summary.encoder = name.into();
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
        if let Some(Some(fill)) = self.durations.get_mut(copied.input_stream) {
            fill.fill(&mut packet);
        }
        if let (true, Some(cut), Some(pts)) = (route.subtitle, self.cut_at_s, packet.pts()) {
            let left = seconds_in(cut, route.input_tb) - pts;
            if packet.duration() > left && left > 0 {
                packet.set_duration(left);
            }
        }
        let hidden = sys::packet_is_discarded(&packet);
        packet.rescale_ts(route.input_tb, route.output_tb);
        if route.offset != 0 {
            packet.set_pts(packet.pts().map(|t| t + route.offset));
            packet.set_dts(packet.dts().map(|t| t + route.offset));
        }
        // A copied stream cut with the video (an MP4 trimmed with stream copy): the audio
        // before the cut is still in the file, hidden by its edit list.
        let kept_before = if route.no_preroll {
            0
        } else {
            packet.duration().max(1)
        };
        if let (true, true, Some(pts)) = (route.drop_hidden, hidden, packet.pts())
            && pts + packet.duration().max(1) + kept_before <= 0
        {
            self.summary.hidden_packets += 1;
            return Ok(CopyOutcome::Written);
        }
        // A subtitle cue that starts before the picture (the output starts with the video
        // and audio): Matroska would move its start to zero and keep its length, showing it
        // over the wrong frames. It is shown from zero to its own end; one that ends before
        // zero is left out, as chapters are.
        if let (true, Some(pts)) = (route.subtitle, packet.pts())
            && pts < 0
        {
            // A cue with no text (mov_text's filler between cues is a 2-byte empty string)
            // is moved like the others but not counted as one in the warnings.
            let counted = u64::from(packet.size() > 2);
            let end = pts + packet.duration();
            if packet.duration() > 0 && end <= 0 {
                self.summary.cues_before_picture += counted;
                return Ok(CopyOutcome::Written);
            }
            if packet.duration() > 0 {
                packet.set_duration(end);
            }
            packet.set_pts(Some(0));
            packet.set_dts(packet.dts().map(|d| d.max(0)));
            self.cues_shortened += counted;
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

    /// Where the video written so far ends, in seconds of the input's timeline (minus
    /// infinity before the first frame).
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

    /// Name `path` in write errors instead of the output (a segment's file in the work
    /// folder, where the disk that fills is the work folder's).
    pub fn name_write_errors(&mut self, path: &Path) {
        self.write_errors_as = Some(path.to_path_buf());
    }

    /// What was written so far.
    pub fn summary(&self) -> &WriterSummary {
        &self.summary
    }

    /// Write the trailer (once): the file is complete and plays.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let empty_streams: Vec<usize> = (self.routes.iter().enumerate())
            .filter(|(_, r)| r.as_ref().is_some_and(|r| r.last_dts.is_none()))
            .map(|(i, _)| i)
            .collect();
        let closing = closing_notes::Closing {
            moved_frames: self.moved_frames,
            video_tb: self.video_tb,
            cues_shortened: self.cues_shortened,
            empty_streams: &empty_streams,
            drops_empty_tracks: self.strict_dts && !self.segment_file,
        };
        closing_notes::note(&mut self.summary, &closing);
        self.output.write_trailer().map_err(|e| self.mux_error(e))
    }

    fn mux_error(&self, e: ffmpeg_next::Error) -> EngineError {
        let full = matches!(e, ffmpeg_next::Error::Other { errno } if errno == ffmpeg_next::util::error::ENOSPC);
        let advice = match (self.segment_file, full) {
            (true, true) => {
                "; it is a file of the work folder, where segments wait to be put together: free space there, or give --work a folder on another disk (for one input: -i IN -o OUT --work DIR)"
            }
            (false, true) => "; free space there, or write the output to another disk",
            _ => "",
        };
        let named = self.write_errors_as.as_ref().unwrap_or(&self.shown_as);
        EngineError::Mux(format!("{}: writing failed: {e}{advice}", named.display()))
    }
}

/// Where a frame presented at `pts` (in `time_base`) ends, in seconds: one nominal frame
/// later (none when the rate is unknown).
pub fn frame_end_s(pts: i64, time_base: Rational, frame_rate: Rational) -> f64 {
    let rate = f64::from(frame_rate);
    pts as f64 * f64::from(time_base) + if rate > 0.0 { 1.0 / rate } else { 0.0 }
}

/// Whether a muxer error is about the packet's data or timestamps (not the output file):
/// invalid data, or data FFmpeg cannot rewrite ("patches welcome": a damaged ADTS header
/// asking `aac_adtstoasc` for several frames with a CRC, or a PCE layout).
fn is_invalid_data(e: &ffmpeg_next::Error) -> bool {
    matches!(
        e,
        ffmpeg_next::Error::InvalidData | ffmpeg_next::Error::PatchWelcome
    ) || matches!(e, ffmpeg_next::Error::Other { errno } if *errno == ffmpeg_next::util::error::EINVAL)
}

fn fourcc(tag: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*tag)
}
