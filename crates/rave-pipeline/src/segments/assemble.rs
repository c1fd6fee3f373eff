//! Assembling the output: the finished segments' packets in order, remuxed without
//! re-encoding, with every audio, subtitle and attachment stream, chapters, metadata,
//! rotation and colour tags copied from the source once. Video timestamps are the source's;
//! decode timestamps stay increasing across the joins.

use std::path::{Path, PathBuf};

use ffmpeg_next::Rational;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::muxer::{Muxer, OutputDescription, SourceStreams, VideoStreamSpec, frame_end_s};
use rave_ffmpeg::segment_file::SegmentFile;
use rave_ffmpeg::writer::nominal_frame_rate;
use rave_ffmpeg::{Container, DecodeStats, FrameBounds, VideoCodec, VideoReader, WriterSummary};

use super::last_frame::LastFrameLength;
use crate::cancel::{CancelToken, StopReason};
use crate::copied_streams::CopiedStreams;

/// What to assemble.
pub struct AssemblyInput<'a> {
    /// The source (for its other streams, chapters and metadata).
    pub source: &'a Path,
    /// The segment files in order, each with the timestamp of its first frame.
    pub segments: Vec<(PathBuf, Option<i64>)>,
    /// Frames they hold in all.
    pub frames: u64,
    /// The video codec they were encoded with.
    pub codec: VideoCodec,
    /// The output container.
    pub container: Container,
    /// Leave out refused packets of damaged copied streams instead of failing.
    pub allow_corrupt: bool,
    /// The video ends before the source's (an interrupted run, `--max-frames`): copied
    /// streams end with it.
    pub ends_early: bool,
    /// How long the source video's last frame lasts, in its time base: given to the
    /// output's last packet where the video does not end early.
    pub last_frame_ticks: Option<i64>,
}

/// What assembling wrote and read.
pub struct Assembled {
    /// The muxer's account.
    pub summary: WriterSummary,
    /// The source reader's counters (copied packets).
    pub source_stats: DecodeStats,
    /// Packets of copied streams the source reader dropped or the muxer refused, with the
    /// first reason.
    pub refused: (u64, Option<String>),
}

/// Where the video of the last segment `(path, first pts)` ends, in seconds of the
/// source's timeline, as the muxer will count it (its last frame's end); `None` without a
/// timed frame. Read before the output is created, since the chapters go into its header
/// (MP4 builds its chapter track there); only for a video that ends early.
fn video_end_s(last: &(PathBuf, Option<i64>), frame_rate: Rational) -> Result<Option<f64>> {
    let mut seg = SegmentFile::open(&last.0)?;
    if let Some(first) = last.1 {
        seg.restore_first_pts(first);
    }
    let tb = seg.time_base();
    let mut end = f64::NEG_INFINITY;
    while let Some(packet) = seg.next_packet()? {
        if let Some(pts) = packet.pts() {
            end = end.max(frame_end_s(pts, tb, frame_rate));
        }
    }
    Ok(Some(end).filter(|e| e.is_finite()))
}

/// Write the output into `path` (messages name `shown_as`).
pub fn assemble(
    input: &AssemblyInput<'_>,
    path: &Path,
    shown_as: &Path,
    cancel: &CancelToken,
) -> Result<Assembled> {
    let Some((first_path, _)) = input.segments.first() else {
        return Err(EngineError::InvariantViolation(
            "assembling an output from no segment".into(),
        ));
    };
    let first = SegmentFile::open(first_path)?;
    let headers = first.extradata();
    let mut source =
        VideoReader::open_within(input.source, None, FrameBounds::default(), None, 0.into())?;
    let frame_rate = nominal_frame_rate(&source);
    let corrected_starts = source.corrected_starts();
    let cut_at_s = match input.segments.last() {
        Some(last) if input.ends_early => video_end_s(last, frame_rate)?,
        _ => None,
    };
    // The input's last frame length, where the output's video ends where the input's does.
    let last_frame = match (input.segments.last(), input.last_frame_ticks) {
        (Some(last), Some(ticks)) if !input.ends_early => {
            LastFrameLength::of(last, ticks, source.time_base())?
        }
        _ => None,
    };
    let mut muxer = {
        let description = OutputDescription {
            container: Some(input.container),
            video: VideoStreamSpec {
                parameters: first.parameters(),
                codec: input.codec,
                time_base: first.time_base(),
                frame_rate,
                sample_aspect: first.sample_aspect_ratio(),
            },
            source: Some(SourceStreams {
                input: source.input(),
                video_index: source.video_index(),
                path: input.source,
                cut_at_s,
                corrected_starts: &corrected_starts,
            }),
        };
        Muxer::create(path, shown_as, &description)?
    };
    drop(first);
    {
        let mut copied =
            CopiedStreams::new(|| Ok(source.next_copied_packet()), input.allow_corrupt);
        for (seg_path, first_pts) in &input.segments {
            if cancel.reason() == Some(StopReason::Failure) {
                return Err(EngineError::Cancelled);
            }
            let mut seg = SegmentFile::open(seg_path)?;
            if let Some(first) = first_pts {
                seg.restore_first_pts(*first);
            }
            if seg.extradata() != headers {
                return Err(EngineError::Mux(format!(
                    "{}: this segment was encoded with other codec headers than the first; its settings differ (redo it: remove the file and run the job again)",
                    seg_path.display()
                )));
            }
            let tb = seg.time_base();
            let last_segment = seg_path == &input.segments.last().expect("a segment").0;
            let ends = last_frame.filter(|_| last_segment);
            while let Some(mut packet) = seg.next_packet()? {
                if let Some(ends) = &ends {
                    ends.apply(&mut packet);
                }
                muxer.write_video(packet, tb)?;
                copied.write_up_to_video(&mut muxer)?;
            }
        }
        muxer.count_frames(input.frames);
        if input.ends_early {
            copied.leave_out_the_rest(&mut muxer)?;
        } else {
            copied.write_all(&mut muxer)?;
        }
    }
    muxer.finish()?;
    let summary = muxer.summary().clone();
    let refused = (summary.refused_packets, summary.first_refusal.clone());
    Ok(Assembled {
        summary,
        source_stats: source.stats().clone(),
        refused,
    })
}
