//! What a muxer says as it closes its file: frames moved a tick, subtitle cues shortened or
//! left out, and copied streams of which no packet was written, which MP4 and MOV drop
//! (their muxer writes no track without samples; Matroska keeps an empty one).

use ffmpeg_next::Rational;

use crate::writer::WriterSummary;

/// What happened while the file was written, to be said.
pub(crate) struct Closing<'a> {
    /// Frames moved one tick later (they fell on the tick of the frame before them), and
    /// the video's time base.
    pub moved_frames: u64,
    pub video_tb: Rational,
    /// Subtitle cues that began before the picture, shortened to start with it.
    pub cues_shortened: u64,
    /// Copied input streams of which no packet was written, and whether the container
    /// drops such a track (MP4, MOV).
    pub empty_streams: &'a [usize],
    pub drops_empty_tracks: bool,
}

/// Add what `closing` says to `summary`'s warnings; copied streams the container drops
/// for want of packets move from its copied streams to its skipped ones.
pub(crate) fn note(summary: &mut WriterSummary, closing: &Closing<'_>) {
    if closing.moved_frames > 0 {
        summary.warnings.push(format!(
            "{} video frame(s) fell on the same tick of the output's time base ({}) as the frame before them (input frames closer together than it can tell apart): each went one tick later, so every frame is kept",
            closing.moved_frames, closing.video_tb
        ));
    }
    let (shortened, left_out) = (closing.cues_shortened, summary.cues_before_picture);
    if shortened > 0 {
        summary.warnings.push(format!(
            "{shortened} subtitle cue(s) began before the picture (the output starts with its first frame and audio): each is shown from the start until its own end"
        ));
    }
    if left_out > 0 {
        summary.warnings.push(format!(
            "{left_out} subtitle cue(s) ended before the picture starts and are left out"
        ));
    }
    if closing.drops_empty_tracks {
        for &index in closing.empty_streams {
            summary.copied_streams.retain(|&i| i != index);
            summary.skipped_streams.push(format!(
                "input stream #{index}: no packet of it lies within the frames written (it starts after the last of them, or holds none), and MP4/MOV write no track without one (.mkv keeps it empty)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_copied_stream_is_skipped_where_the_container_drops_it() {
        let closing = |drops| Closing {
            moved_frames: 0,
            video_tb: Rational::new(1, 1000),
            cues_shortened: 0,
            empty_streams: &[2],
            drops_empty_tracks: drops,
        };
        let mut summary = WriterSummary {
            copied_streams: vec![1, 2],
            ..Default::default()
        };
        note(&mut summary, &closing(false));
        assert_eq!(summary.copied_streams, [1, 2], "Matroska keeps it");
        note(&mut summary, &closing(true));
        assert_eq!(summary.copied_streams, [1]);
        assert!(summary.skipped_streams[0].starts_with("input stream #2: no packet"));
    }
}
