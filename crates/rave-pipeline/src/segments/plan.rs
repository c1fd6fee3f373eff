//! Cutting a video into segments of whole frames at keyframes: each segment is decoded on its
//! own (from the keyframe before its first frame), so every frame is in exactly one segment,
//! in order.

use rave_ffmpeg::KeyframeIndex;
use serde::{Deserialize, Serialize};

/// Default segment length: about this many seconds of video at most.
pub const DEFAULT_SEGMENT_SECONDS: f64 = 60.0;

/// With several workers, the default gives each about this many segments (so that the last
/// round leaves few workers idle), down to [`MIN_DEFAULT_SEGMENT_SECONDS`].
pub const SEGMENTS_PER_WORKER: u64 = 4;

/// The shortest default segment with several workers: a seam costs a new decoder and
/// encoder (measured 45 ms with no encoder on the H200), so segments stay a few seconds.
pub const MIN_DEFAULT_SEGMENT_SECONDS: f64 = 2.0;

/// One planned segment: frames `first_frame..first_frame + frames` of the video, those whose
/// timestamps fall in `[start_pts, end_pts)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedSegment {
    /// Position in the job (0-based).
    pub index: usize,
    /// Index of its first frame in the video.
    pub first_frame: u64,
    /// Frames it holds.
    pub frames: u64,
    /// Timestamp of its first frame (video time base); `None` for the first segment (from
    /// the start of the file).
    pub start_pts: Option<i64>,
    /// Timestamp of the first frame after it; `None` for the last segment (to the end).
    pub end_pts: Option<i64>,
    /// Where decoding starts: the keyframe before `start_pts` (open GOPs and leading
    /// pictures need the pictures before it); `None` from the start of the file.
    pub seek_pts: Option<i64>,
}

/// The plan of a job: its segments, and why it is one segment when it is.
#[derive(Debug, Clone)]
pub struct SegmentPlan {
    /// The segments in order.
    pub segments: Vec<PlannedSegment>,
    /// Frames in the job.
    pub frames: u64,
    /// Why the video was not cut (when it is one segment for a reason other than length).
    pub single_reason: Option<String>,
    /// The job stops before the video's end (`--max-frames` under its frame count).
    pub ends_early: bool,
}

/// The target segment length in frames of a job of `frames` frames at `fps` run by
/// `workers` workers at once: about a minute with one worker; with several, short enough
/// that each gets about [`SEGMENTS_PER_WORKER`] segments (a short clip on two GPUs is not
/// one segment with one GPU idle), but no shorter than [`MIN_DEFAULT_SEGMENT_SECONDS`].
pub fn default_segment_frames(fps: f64, frames: u64, workers: usize) -> u64 {
    let fps = if fps.is_finite() && fps > 0.0 {
        fps
    } else {
        25.0
    };
    let longest = (fps * DEFAULT_SEGMENT_SECONDS).round().max(1.0) as u64;
    if workers <= 1 {
        return longest;
    }
    let shortest = (fps * MIN_DEFAULT_SEGMENT_SECONDS).round().max(1.0) as u64;
    let shared = frames.div_ceil(workers as u64 * SEGMENTS_PER_WORKER);
    shared.clamp(shortest, longest)
}

/// Plan `index` as segments of about `target` frames each, cut at the next keyframe; only the
/// first `max_frames` frames when given. A video that cannot be cut (see
/// `KeyframeIndex::why_not_cuttable`) is one segment; so is one no longer than `target`.
pub fn plan_segments(index: &KeyframeIndex, target: u64, max_frames: Option<u64>) -> SegmentPlan {
    let target = target.max(1);
    let all = index.frames();
    let frames = max_frames.map_or(all, |m| m.min(all));
    if let Some(why) = index.why_not_cuttable() {
        return SegmentPlan {
            segments: vec![whole(frames, None)],
            frames,
            single_reason: Some(why),
            ends_early: frames < all,
        };
    }
    let pts = index.frame_pts();
    // The first frame not in the job, when the job stops early.
    let end = (frames < all).then(|| pts[frames as usize]);
    let mut cuts: Vec<u64> = vec![0];
    for &key in index.keyframes() {
        let at = pts.partition_point(|&p| p < key) as u64;
        let last = *cuts.last().expect("starts with 0");
        // Cut once a segment is long enough, but leave no tail shorter than half a segment.
        if at >= last + target && at < frames && frames - at >= target.div_ceil(2) {
            cuts.push(at);
        }
    }
    if cuts.len() == 1 {
        return SegmentPlan {
            segments: vec![whole(frames, end)],
            frames,
            single_reason: None,
            ends_early: frames < all,
        };
    }
    let keyframes = index.keyframes();
    let segments = cuts
        .iter()
        .enumerate()
        .map(|(i, &first)| {
            let next = cuts.get(i + 1).copied();
            let start = (i > 0).then(|| pts[first as usize]);
            let seek = start.map(|s| {
                let k = keyframes.partition_point(|&p| p < s);
                keyframes[k.saturating_sub(1)]
            });
            PlannedSegment {
                index: i,
                first_frame: first,
                frames: next.unwrap_or(frames) - first,
                start_pts: start,
                end_pts: next.map(|n| pts[n as usize]).or(end),
                seek_pts: seek,
            }
        })
        .collect();
    SegmentPlan {
        segments,
        frames,
        single_reason: None,
        ends_early: frames < all,
    }
}

fn whole(frames: u64, end: Option<i64>) -> PlannedSegment {
    PlannedSegment {
        index: 0,
        first_frame: 0,
        frames,
        start_pts: None,
        end_pts: end,
        seek_pts: None,
    }
}

#[cfg(test)]
mod tests {
    use ffmpeg_next::Rational;

    use super::*;

    /// `n` frames at timestamps 0, 2, 4... (time base 1/50 at 25 fps), a keyframe every `gop`.
    fn index(n: i64, gop: i64) -> KeyframeIndex {
        let mut i = KeyframeIndex::new(Rational::new(1, 50), Rational::new(25, 1));
        for f in 0..n {
            i.add((Some(f * 2), None), f % gop == 0, false);
        }
        i.finish(0);
        i
    }

    #[test]
    fn the_default_length_gives_several_workers_several_segments_each() {
        // One worker: about a minute, whatever the length.
        assert_eq!(default_segment_frames(25.0, 300, 1), 1500);
        assert_eq!(default_segment_frames(f64::NAN, 10, 1), 1500);
        // Four workers on 10 minutes at 25 fps: 16 segments of 15000 / 16 frames.
        assert_eq!(default_segment_frames(25.0, 15_000, 4), 938);
        // A long film: a minute at most.
        assert_eq!(default_segment_frames(24.0, 24 * 7200, 4), 1440);
        // 300 frames on two workers: 2 s segments, not 37 frames.
        assert_eq!(default_segment_frames(25.0, 300, 2), 50);
        let plan = plan_segments(&index(300, 25), default_segment_frames(25.0, 300, 2), None);
        assert_eq!(plan.segments.len(), 6);
    }

    #[test]
    fn cuts_at_the_next_keyframe_after_the_target() {
        let plan = plan_segments(&index(48, 5), 12, None);
        let firsts: Vec<u64> = plan.segments.iter().map(|s| s.first_frame).collect();
        assert_eq!(firsts, [0, 15, 30]);
        let frames: Vec<u64> = plan.segments.iter().map(|s| s.frames).collect();
        assert_eq!(frames, [15, 15, 18]);
        assert_eq!(plan.frames, 48);
        let s1 = &plan.segments[1];
        assert_eq!(
            (s1.start_pts, s1.end_pts, s1.seek_pts),
            (Some(30), Some(60), Some(20))
        );
        assert_eq!(plan.segments[0].start_pts, None);
        assert_eq!(plan.segments[2].end_pts, None);
    }

    #[test]
    fn every_frame_is_in_exactly_one_segment() {
        for (n, gop, target) in [(100, 1, 1), (100, 7, 10), (37, 3, 5), (10, 2, 100)] {
            let plan = plan_segments(&index(n, gop), target, None);
            let mut next = 0;
            for s in &plan.segments {
                assert_eq!(s.first_frame, next);
                next += s.frames;
            }
            assert_eq!(next, n as u64);
        }
    }

    #[test]
    fn a_short_or_uncuttable_video_is_one_segment() {
        let short = plan_segments(&index(10, 2), 100, None);
        assert_eq!(short.segments.len(), 1);
        assert_eq!(short.single_reason, None);
        let one_gop = plan_segments(&index(30, 100), 5, None);
        assert_eq!(one_gop.segments.len(), 1);
        assert!(one_gop.single_reason.is_some());
    }

    #[test]
    fn max_frames_ends_the_job_at_that_frame() {
        let plan = plan_segments(&index(48, 4), 8, Some(20));
        assert_eq!(plan.frames, 20);
        let last = plan.segments.last().unwrap();
        assert_eq!(last.end_pts, Some(40));
        assert_eq!(last.first_frame + last.frames, 20);
    }
}
