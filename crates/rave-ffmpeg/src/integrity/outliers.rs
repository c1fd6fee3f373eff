//! Timestamps damaged out of all proportion: one packet of an audio or video stream whose
//! time leaps far ahead of its own stream and of the other streams that were in step with
//! it (a flipped high bit in an FLV tag or a Matroska block), while the stream's next
//! packet comes back to where it was. Taken as it is, it wedges the timeline: every good
//! packet after it goes "backwards" and is dropped, or the muxer cannot store the leap at
//! all. A leap is only a candidate until that next packet is read: a recording whose
//! streams all pause leaps too, one stream first, and its next packet does not come back.
//! A stream that ran on alone after the others ended is not in step with them, and is not
//! judged.

/// Seconds a packet may lead its own stream's previous packet and every stream in step
/// with it before its time is taken for damage (streams lead each other by a second or
/// two at most: an encoder's lookahead, a muxer's preload).
pub(super) const OUTLIER_S: f64 = 5.0;

/// Whether a packet at `at_s` of a stream whose previous packet was at `previous_s` leaps
/// out of all proportion, given the latest times of the other audio and video streams
/// (`others_s`): more than [`OUTLIER_S`] past its own previous packet and past every other
/// stream that was in step with that (within [`OUTLIER_S`] of it), where there is one.
/// The stream's own leap is checked first: `others_s` is only walked for the rare packet
/// that leaps (this runs for every packet read).
pub(super) fn leaps_ahead(
    at_s: f64,
    previous_s: Option<f64>,
    others_s: impl IntoIterator<Item = f64>,
) -> bool {
    let Some(previous) = previous_s else {
        return false;
    };
    if at_s - previous <= OUTLIER_S {
        return false;
    }
    let mut in_step = others_s
        .into_iter()
        .filter(|&o| (o - previous).abs() <= OUTLIER_S)
        .peekable();
    in_step.peek().is_some() && in_step.all(|o| at_s - o > OUTLIER_S)
}

/// Whether the stream's next packet, at `next_s`, comes back from a leap to `leap_s` to
/// where the stream was before it (`previous_s`): within [`OUTLIER_S`] of that, and more
/// than [`OUTLIER_S`] before the leap.
pub(super) fn comes_back(next_s: f64, previous_s: f64, leap_s: f64) -> bool {
    (next_s - previous_s).abs() <= OUTLIER_S && leap_s - next_s > OUTLIER_S
}

/// Packets read ahead, at most, for the next packet of a stream whose packet leapt (a
/// sparse stream's next packet may be far; not finding it, the leap is let be).
pub(crate) const LOOKAHEAD_PACKETS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leap_past_its_stream_and_the_streams_in_step_is_damage() {
        // Audio at 0.9 s, video at 1.0 s: an audio packet at 67109 s (2^26 ms added).
        assert!(leaps_ahead(67109.7, Some(0.9), [1.0]));
        // Four seconds ahead is within what streams may lead each other by; six is not.
        assert!(!leaps_ahead(5.0, Some(0.9), [1.0]));
        assert!(leaps_ahead(6.5, Some(0.9), [1.0]));
    }

    #[test]
    fn only_a_stream_that_comes_back_after_its_leap_was_damaged() {
        // One audio packet at 67109 s between packets at 0.90 and 0.93 s.
        assert!(comes_back(0.93, 0.9, 67109.7));
        // A pause of both streams: the next packet is past the pause too.
        assert!(!comes_back(13.64, 1.58, 13.6));
    }

    #[test]
    fn a_stream_resuming_where_the_others_are_or_running_alone_is_not_judged() {
        // Audio pauses 30 s: it resumes where the video has got to.
        assert!(!leaps_ahead(31.0, Some(1.0), [30.5]));
        // Video pauses 20 s at 40 s, its audio ended at 5 s: nothing in step to judge by.
        assert!(!leaps_ahead(60.0, Some(40.0), [5.0]));
        // No other stream, or the first packet of the stream.
        assert!(!leaps_ahead(1e6, Some(1.0), []));
        assert!(!leaps_ahead(1e6, None, [1.0]));
    }
}
