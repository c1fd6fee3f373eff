//! The ledger's verdict: what reading an input lost or damaged, held against what its
//! container declares (`InputDamage`).

use rave_core::damage::InputDamage;

use super::stream_tally::{Role, StreamTally};
use super::{IntegrityLedger, hidden_past_end};
use crate::declared::HEADER_FRAMES_SLACK;
use crate::decoder_log::DecoderLog;
use crate::timeline;

/// Seconds a video or audio stream may run past the end its container declares for the
/// whole file before that is damage: a packet whose timestamp leapt (one at the stream's
/// end has no next packet to tell it by), or a timeline FFmpeg took for wrapped. Muxers
/// round the declared end, and an MP4 edit list may end a frame or a packet early.
const OVERRUN_S: f64 = 2.0;

/// Frames after a timeline's last gap that make it one "among the last frames": those a
/// decoder holds back for the B-frames before them (a group of up to three B-frames).
const TAIL_FRAMES: usize = 3;

impl IntegrityLedger {
    /// What was lost or damaged. Only when the input was `read_to_end` are the counts and
    /// timelines compared with what the container declares.
    pub fn damage(&self, read_to_end: bool) -> InputDamage {
        let video = &self.streams[self.video];
        let step_s = self.timeline.exact_step() * video.unit_s;
        let frames_of = |s: f64| {
            if step_s > 0.0 {
                (s / step_s).round() as u64
            } else {
                0
            }
        };
        let file_short = self.file_end_s.filter(|_| read_to_end).map(|end| {
            let longest = self
                .streams
                .iter()
                .filter_map(StreamTally::end_s)
                .fold(0.0, f64::max);
            let tolerance = 1.5 * step_s.max(video.typical_s()) + 0.002;
            end - longest > tolerance
        });
        let truncated =
            self.structure.as_ref().is_some_and(|p| p.truncated) || file_short == Some(true);
        // The latest end of a video or audio stream, against the declared end: the later
        // of its two readings here (a length from the first timestamp, in an FLV or Ogg
        // that starts at 5 s, ends at 5 s past it).
        let overrun = self
            .file_end_s
            .filter(|_| read_to_end)
            .and_then(|declared| {
                let end = declared + self.start_s.max(0.0);
                let longest = (self.streams.iter())
                    .filter(|t| matches!(t.role, Role::Video | Role::Audio))
                    .filter_map(StreamTally::end_s)
                    .fold(f64::MIN, f64::max);
                (longest - end > OVERRUN_S).then_some((longest, end))
            });
        // Where each stream's timeline should end: its own declared end. The file's duration
        // is where its longest stream ends, so it is held against a stream that declares
        // nothing only when the file is cut short: audio that legitimately ends (or starts)
        // before the video in an FLV, say, is not missing.
        let decl_end = |t: &StreamTally| {
            t.declared_end_s()
                .or(self.file_end_s.filter(|_| truncated))
                .filter(|_| read_to_end)
        };
        // Packets before the first keyframe are skipped, not missing (said apart).
        let undecoded = if self.interlaced || !read_to_end {
            0
        } else {
            let leading = self.leading.sent() + self.leading.parts_sent();
            (self.packets_sent - leading).saturating_sub(self.frames_out)
        };
        // A part joined without any keyframe: its frames cannot be decoded (skipped).
        let (unkeyed, unkeyed_from) = self.leading.unkeyed_parts();
        let unread = match video.declared.packets {
            Some(d) if read_to_end => d.saturating_sub(video.packets),
            _ => 0,
        };
        let video_start = self
            .timeline_pts()
            .iter()
            .min()
            .map_or(0.0, |&p| p as f64 * video.unit_s);
        // Where an index cut off by damage says the video goes on to: its last listed
        // fragment starts there, and each fragment it lists there holds a frame at least.
        let indexed = (self.structure.as_ref())
            .and_then(|p| {
                p.indexed_ends
                    .iter()
                    .find(|(t, ..)| Some(*t) == self.video_track)
            })
            .filter(|_| read_to_end);
        let index_end = indexed.map(|&(_, time, _)| time as f64 * video.unit_s + step_s);
        let video_end = match (decl_end(video), index_end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let by_end = video_end
            .map_or(0, |e| frames_of(video.shortfall_s(e, video_start)))
            .max(indexed.map_or(0, |&(.., fragments)| fragments));
        let mut damage = InputDamage {
            frames_declared: video.declared.packets,
            frames_read: video.packets,
            frames_decoded: self.frames_out - self.timeline.duplicates,
            decoding_stopped: self.scanned,
            frames_damaged: self.frames_damaged,
            frames_dropped: self.timeline.duplicates + self.repeated_frames,
            frames_moved: self.timeline.moved.len() as u64,
            demux_errors: self.demux_errors(true),
            decoder_errors: self.decoder_errors(),
            packets_dropped: self.packets_dropped,
            packets_repeated: self.repeated_packets,
            audio_packets_damaged: self.audio.damaged_packets,
            frames_before_first_keyframe: self.leading.read(),
            frames_before_part_keyframes: self.leading.parts_read(),
            truncated,
            ..Default::default()
        };
        // Frames an edit list hides past its end after a gap, where the frames shown leave
        // a place free: damaged timestamps.
        let timeline_pts = self.timeline_pts();
        let shown = hidden_past_end::without(&timeline_pts, &self.hidden_video_pts);
        // The frames hidden past the last one shown are no slots of the timeline shown.
        let past_end = hidden_past_end::past_last(&shown, &self.hidden_video_pts);
        let stray = match self.timeline.constant_rate() && read_to_end {
            true => hidden_past_end::stray(&shown, &past_end, self.timeline.exact_step()),
            false => Vec::new(),
        };
        let damaged = self.damage_seen()
            || truncated
            || overrun.is_some()
            || !stray.is_empty()
            || unread > 0
            || undecoded > 0
            || unkeyed > 0
            || by_end > 0;
        // An AVI header's count is held only against a file damaged otherwise.
        let unread_by_header = match video.declared.header_frames {
            Some(d) if damaged && read_to_end => {
                d.saturating_sub(video.packets + HEADER_FRAMES_SLACK)
            }
            _ => 0,
        };
        let mut tail_gap = false;
        let (gaps, first_gap) = match self.timeline.constant_rate() {
            true => {
                // Nor are the stray hidden frames: the places they left free among the frames
                // shown are what is missing.
                let mut pts = hidden_past_end::without(&timeline_pts, &past_end);
                // A reading stopped early (--max-frames) has read packets ahead of the last
                // frame it made (B-frames come after the frame they precede): the frames
                // between are not read, not missing.
                if !read_to_end && let Some(last) = self.timeline.last_placed() {
                    pts.retain(|&p| p <= last);
                }
                pts.sort_unstable();
                pts.dedup();
                let step = self.timeline.step();
                let frame_s = step as f64 * video.unit_s;
                let between_a_splice = |from: i64, to: i64| {
                    self.resets_s.iter().any(|&r| {
                        from as f64 * video.unit_s - frame_s <= r
                            && r <= to as f64 * video.unit_s + frame_s
                    })
                };
                let exact = self.timeline.exact_step();
                // Spacings off the frame grid are a variable frame rate, whatever the
                // container claims: with no other damage one is enough; in a damaged file a
                // mangled timestamp puts two off it, so a tenth of them must be.
                let (off, spacings) = timeline::off_grid(&pts, exact, between_a_splice);
                let variable = match damaged {
                    false => off > 0,
                    true => off >= 3 && off * 10 >= spacings,
                };
                let gaps = timeline::less_untimed(
                    timeline::gaps(&pts, exact).filter(|&(at, frames)| {
                        !variable && !between_a_splice(at, at + (frames as i64 + 1) * step)
                    }),
                    self.untimed_video,
                );
                // Frames after the last gap: a few (those decoded ahead of the B-frames
                // before them) is the trace of a file cut in the middle of a group.
                let after_last = gaps
                    .last()
                    .map(|&(at, _)| pts.iter().filter(|&&p| p > at).count());
                tail_gap = after_last.is_some_and(|n| n <= TAIL_FRAMES);
                (gaps.iter().map(|g| g.1).sum(), gaps.first().map(|g| g.0))
            }
            false => (0, None),
        };
        // In a damaged file a gap is frames lost; in one that shows no other damage it may
        // be the recorder's, and is said rather than refused.
        match damaged {
            // Slots with no packet (never read: in the gaps, or past the end) and packets
            // that gave no picture are different frames.
            true => {
                let unread = unread.max(unread_by_header);
                // Past the declared end a gap is the overrun's, not frames lost: no more
                // are missing than the declared length holds beyond those read (and shown:
                // frames hidden past the end fill none of it).
                let read_shown = video.packets.saturating_sub(past_end.len() as u64);
                let lost = match overrun {
                    Some((_, end)) => {
                        (gaps + by_end).min(frames_of(end - video_start).saturating_sub(read_shown))
                    }
                    None => gaps + by_end,
                };
                damage.frames_missing = unread.max(lost) + undecoded + unkeyed;
            }
            false => {
                damage.timeline_gaps = gaps;
                damage.first_gap_s = first_gap.map(|p| p as f64 * video.unit_s - video_start);
                damage.gap_among_last_frames = tail_gap && video.declared.packets.is_none();
            }
        }

        let video_end = video.end_s();
        for t in self.streams.iter().filter(|t| t.role == Role::Audio) {
            let by_count = match t.declared.packets {
                Some(d) if read_to_end => d.saturating_sub(t.packets) as f64 * t.typical_s(),
                _ => 0.0,
            };
            let by_end = match decl_end(t) {
                Some(e) => t.shortfall_s(e, video_start),
                // Nothing declared: in a truncated file, audio ending before the video is lost.
                None if truncated && read_to_end => {
                    video_end.map_or(0.0, |v| t.shortfall_s(v, video_start))
                }
                None => 0.0,
            };
            let by_gaps = match (damaged, overrun) {
                (false, _) => 0.0,
                // As for the video: no more than the declared length holds.
                (true, Some((_, end))) => (t.gaps as f64 * t.unit_s)
                    .min((end - video_start - t.packets as f64 * t.typical_s()).max(0.0)),
                (true, None) => t.gaps as f64 * t.unit_s,
            };
            damage.audio_missing_s = damage.audio_missing_s.max(by_count.max(by_end) + by_gaps);
            if !damaged && t.gaps > 0 {
                damage.audio_gaps_s += t.gaps as f64 * t.unit_s;
                let at = t.first_gap.map(|p| p as f64 * t.unit_s - video_start);
                damage.first_audio_gap_s = match (damage.first_audio_gap_s, at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }

        if let Some(cause) = &self.cause {
            damage.note(cause.clone());
        }
        if let Some(p) = &self.structure {
            damage.note(p.text.clone());
        }
        if unkeyed > 0 {
            let from = unkeyed_from.map_or(String::new(), |p| {
                format!(
                    " {:.3} s into the video",
                    p as f64 * video.unit_s - video_start
                )
            });
            damage.note(format!(
                "a part joined to the input{from} holds no video keyframe: its {unkeyed} video frames refer to pictures before its first byte, which the file does not hold, and cannot be decoded"
            ));
        }
        if file_short == Some(true)
            && let Some(end) = self.file_end_s
        {
            damage.note(format!(
                "the container declares {end:.3} s, the streams end earlier"
            ));
        }
        if let Some(&first) = stray.first() {
            let at = first as f64 * video.unit_s - self.start_s;
            damage.note(match stray.len() {
                1 => format!(
                    "a video frame the container hides at {at:.3} s, past the end of what it shows and apart from its last frame: a damaged timestamp, which leaves the frame's place empty"
                ),
                n => format!(
                    "{n} video frames the container hides from {at:.3} s, past the end of what it shows and apart from its last frame: damaged timestamps, which leave the frames' places empty"
                ),
            });
        }
        if let Some((longest, end)) = overrun {
            damage.note(format!(
                "a stream runs to {longest:.3} s, past the {end:.3} s the container declares: a damaged timestamp (at a stream's end, or the timeline read as wrapped)"
            ));
        }
        // FFmpeg's own wording of the first demuxer error, then RAVE's, then the decoder's.
        if let Some(first) = self.demux_log.tally().first() {
            damage.note(first);
        }
        if let Some(first) = self.continuity.first(true) {
            damage.note(first);
        }
        if self.video_probe_errors(true) > 0
            && let Some(first) = self.video_probe_errors.first()
        {
            damage.note(first.clone());
        }
        if let Some(n) = &self.note {
            damage.note(n.clone());
        }
        if let Some(first) = self.decoder_log.as_ref().and_then(DecoderLog::first) {
            damage.note(first);
        }
        if unread > 0 {
            damage.note(format!(
                "the container lists {} video frames, {} could be read",
                unread + video.packets,
                video.packets
            ));
        }
        if let Some(first) = &self.audio.first_problem {
            damage.note(first.clone());
        }
        damage
    }
}
