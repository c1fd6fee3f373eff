//! Timestamps damaged out of proportion: one packet of an audio or video stream whose time
//! leaps ahead while the stream's next packet comes back to where it was. Taken as it is,
//! it wedges the timeline: every good packet after it goes "backwards" and is dropped, a
//! frame is shown seconds late on top of another, or the muxer cannot store the leap at
//! all. A leap is only a candidate until the stream's next packets are read: a recording
//! whose streams all pause leaps too, one stream first, and its next packet does not come
//! back. Three kinds are told:
//! - far: more than [`OUTLIER_S`] past its own stream and every stream in step with it (a
//!   flipped high bit in an FLV tag); a stream that ran on alone after the others ended is
//!   not in step with them, and is not judged;
//! - audio: starting well past where its stream's previous packet ended, the next one
//!   following on from that (a flipped low bit in a Matroska block): audio is never
//!   reordered, so it is the one packet out of place;
//! - video: shown far longer after it is decoded than B-frames are held back, the frames
//!   decoded next shown before it and leaving one slot free for it.

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

/// Seconds an audio stream's next packet may start off one packet after the packet before
/// a leapt one, and still follow on from it: two packets, and at least 50 ms (a muxer's
/// rounding and an encoder's small gaps stay well within it).
fn audio_margin_s(typical_s: f64) -> f64 {
    (2.0 * typical_s).max(0.05)
}

/// Whether an audio packet at `at_s` (`own_s` long) starts away from where its stream's
/// previous packet ended (`expected_s`) by more than half a packet (and 2 ms: a
/// millisecond time base rounds both): a candidate for a damaged timestamp however short
/// the leap (a flipped low bit in a Matroska block), confirmed by [`audio_comes_back`]. A
/// real gap in the sound is one too, and its next packet does not come back.
pub(super) fn audio_out_of_step(at_s: f64, expected_s: f64, own_s: f64) -> bool {
    (at_s - expected_s).abs() > (own_s / 2.0).max(0.002)
}

/// Whether the audio stream's next packet, at `next_s`, shows that the packet before it
/// (at `leap_s`, `own_s` long) was the damaged one: the next follows on from the packet
/// before the leap (which started at `previous_s` and ended at `expected_s`), leaving room
/// for the leapt packet and not much more, and the leapt packet would put its neighbours
/// out of order: it, or a packet that moved with it, starting after the next (which would
/// go "backwards": a PES header 0.18 s ahead, its dozen frames running past the next PES's
/// start), or it starting before the previous (as it would). Audio is never reordered, so
/// it is the one out of place; taken the other way, every good packet until the stream
/// passed the leap was dropped (176 packets, 4.1 s of sound, for one bit in a Matroska
/// block). An order a muxer stores is not judged: no packet is taken for damage that was
/// not lost before.
pub(super) fn audio_comes_back(
    next_s: f64,
    (previous_s, expected_s): (f64, f64),
    leap_s: f64,
    own_s: f64,
    typical_s: f64,
) -> bool {
    let margin = audio_margin_s(typical_s);
    let follows_on = next_s >= expected_s - margin && next_s - expected_s <= own_s + margin;
    // The run's last packet (each `typical_s` long) starts after the next.
    let overlaps_next = leap_s + own_s - typical_s > next_s;
    follows_on && (overlaps_next || leap_s < previous_s)
}

/// Seconds an audio packet may start off where the packet before it ended and still be on
/// its stream's grid: a millisecond time base rounds both ends.
pub(super) const GRID_S: f64 = 0.002;

/// Audio packets in a row on their stream's grid (each starting where the one before
/// ended, within [`GRID_S`]) before one off it by more than half a packet is judged by
/// [`audio_leaves_its_slot`]: a capture timed from a jittery clock never gets there.
pub(super) const GRID_PACKETS: u32 = 8;

/// Whether, on a stream whose packets follow on exactly, a run of audio packets (`run_s`
/// long) off its place by more than half a packet (a candidate of [`audio_out_of_step`])
/// left its place empty: the stream's next packet, at `next_s`, starts where the run would
/// have ended had it started where the previous packet ended (`expected_s`), within
/// [`GRID_S`]. One PES holding one AAC frame moved back onto the packet before it, or
/// forward onto the one after it, by a damaged header: a muxer stores it, and taken as it
/// was the sound played a frame out of place (two frames at one time, none at the next)
/// with nothing said.
pub(super) fn audio_leaves_its_slot(next_s: f64, expected_s: f64, run_s: f64) -> bool {
    (next_s - (expected_s + run_s)).abs() <= GRID_S
}

/// Seconds a video frame may be shown after it is decoded (its B-frame reordering) before
/// its presentation time is a candidate for damage: 16 frames, and at least half a second
/// (x264 and x265 reorder a few frames; FFmpeg guesses Matroska's decode times from them).
fn reorder_margin_s(step_s: f64) -> f64 {
    (16.0 * step_s).max(0.5)
}

/// Whether a video packet is shown (`pts_s`) further after it is decoded (`dts_s`) than any
/// reordering holds a frame back (frames `step_s` apart): a candidate for a damaged
/// presentation time (a flipped bit in a Matroska block), confirmed by
/// [`video_comes_back`]. Taken as it was, the frame was shown seconds late, on top of
/// another (dropped as a duplicate) and missing from its own place.
pub(super) fn shown_long_after_decoded(pts_s: f64, dts_s: f64, step_s: f64) -> bool {
    pts_s - dts_s > reorder_margin_s(step_s)
}

/// Whether a video packet is shown (`pts_s`) before it is decoded (`dts_s`), by more than
/// half a frame (`step_s`) and 2 ms, beyond any time base's rounding: no decoder can show a
/// picture it has not decoded, so one of the two times is damaged (a flipped bit in an
/// MPEG-TS PES header). Taken as it was, the frame was shown seconds early, the picture
/// frozen for as long after it, and nothing said. Confirmed by the frames decoded next
/// being in order themselves (a stream whose every frame is so has its own reading).
pub(super) fn shown_before_decoded(pts_s: f64, dts_s: f64, step_s: f64) -> bool {
    dts_s - pts_s > (step_s / 2.0).max(0.002)
}

/// Whether an audio stream's first packets, a run of `run_s` starting at `leap_s` (packets
/// `own_s` long), are shown to be damaged by the packet after the run, at `next_s`: the
/// run's last packet starts after it (2 ms of rounding aside), so it would go back, while
/// the stream goes on from it (the next run starts `then_gap_s` after `next_s`'s run ended,
/// within the margin of a packet): audio is never reordered, and the stream goes on from
/// the later packets, not from its first. Taken as they were, every good packet until the
/// stream passed the run was dropped (824 of 834 packets, the whole sound, for one bit in
/// the first PES of an MPEG-TS; 8 packets for a PES 0.18 s late). A first packet before the
/// rest, with a gap after it, is not judged: a stream may start with a lone packet.
pub(super) fn first_audio_comes_back(
    (leap_s, run_s): (f64, f64),
    next_s: f64,
    then_gap_s: f64,
    own_s: f64,
) -> bool {
    let margin = audio_margin_s(own_s);
    leap_s + run_s - own_s > next_s + 0.002 && (then_gap_s - own_s).abs() <= margin
}

/// Whether a video packet decoded at `dts_s` is decoded further after its stream's
/// previous packet (`previous_s`) than a reordering holds frames back: its decode time
/// leapt with its presentation time (an FLV tag's timestamp), or the picture paused.
pub(super) fn decoded_long_after(dts_s: f64, previous_s: f64, step_s: f64) -> bool {
    dts_s - previous_s > reorder_margin_s(step_s)
}

/// Whether the video stream's next packet (shown at `next_pts_s`, decoded at
/// `next_dts_s`) is reordered as frames are, and shown well before the candidate's
/// `leap_pts_s`: the candidate's time was damaged. A stream whose every frame is shown
/// late (a container's constant offset) does not come back.
pub(super) fn video_comes_back(
    next_pts_s: f64,
    next_dts_s: f64,
    leap_pts_s: f64,
    step_s: f64,
) -> bool {
    !shown_long_after_decoded(next_pts_s, next_dts_s, step_s)
        && leap_pts_s - next_pts_s > reorder_margin_s(step_s)
}

/// Audio packets, at most, that one damaged timestamp moves together (an MPEG-TS PES
/// holds a dozen AAC frames, each timed from its header).
pub(crate) const RUN_PACKETS: usize = 32;

/// Video packets before and after a damaged frame whose presentation times tell its place
/// (a few times the deepest B-frame reordering).
pub(crate) const SLOT_NEIGHBOURS: usize = 16;

/// The one slot free on a grid of frames `exact_step` units apart among `sorted` (distinct
/// presentation times, ascending) within `reach` (the times a frame decoded where the
/// damaged one was may be shown at: from its decode time to a reordering later). Slots
/// free at the window's edges (B-frames of a frame at its end, read later) lie outside.
/// None where no slot or more than one is free there.
pub(super) fn free_slot(
    sorted: &[i64],
    exact_step: f64,
    reach: std::ops::RangeInclusive<i64>,
) -> Option<i64> {
    let mut free = sorted.windows(2).flat_map(|w| {
        let frames = ((w[1] - w[0]) as f64 / exact_step).round() as i64;
        (1..frames).map(move |k| w[0] + ((w[1] - w[0]) * k + frames / 2) / frames)
    });
    let mut within = free.by_ref().filter(|slot| reach.contains(slot));
    let slot = within.next()?;
    within.next().is_none().then_some(slot)
}

/// The presentation times a frame decoded at `dts` may have, on a grid of frames
/// `exact_step` units apart: from two frames before its decode time (FFmpeg guesses
/// Matroska's decode times from the presentation times, a frame late after a damaged one)
/// to eight frames after it (x264 and x265 hold a B-frame back a few frames).
pub(super) fn reorder_reach(dts: i64, exact_step: f64) -> std::ops::RangeInclusive<i64> {
    let frames = |n: f64| (n * exact_step).round() as i64;
    dts - frames(2.0)..=dts + frames(8.0)
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
    fn an_audio_packet_out_of_place_by_less_than_seconds_is_told_by_its_neighbours() {
        // AAC at 44.1 kHz, 23 ms packets: the one after 2.322 s (which ended at 2.345 s)
        // at 6.441 s (4096 ms added), the next at 2.368 s.
        let (own, previous) = (0.0232, (2.322, 2.345));
        assert!(audio_out_of_step(6.441, 2.345, own));
        assert!(audio_comes_back(2.368, previous, 6.441, own, own));
        // 64 ms late, or 1 s early: out of place too.
        assert!(audio_comes_back(2.368, previous, 2.409, own, own));
        assert!(audio_out_of_step(1.345, 2.345, own));
        assert!(audio_comes_back(2.368, previous, 1.345, own, own));
        // 5 ms late is no candidate; a real pause in the sound is one, and the next packet
        // is past the pause too.
        assert!(!audio_out_of_step(2.350, 2.345, own));
        assert!(audio_out_of_step(3.0, 2.345, own));
        assert!(!audio_comes_back(3.023, previous, 3.0, own, own));
        // 15 ms late, overlapping the next packet (which starts after it): a muxer stores
        // it, so it is not judged by its order; on a grid, by the place it left empty.
        assert!(!audio_comes_back(2.368, previous, 2.360, own, own));
        assert!(audio_leaves_its_slot(2.368, 2.345, own));
        // Moved back onto the packet before it, the next one in its place; not where the
        // next goes on from the moved one (an encoder's correction) or leaves a gap.
        assert!(audio_out_of_step(2.322, 2.345, own));
        assert!(audio_leaves_its_slot(2.3685, 2.345, own));
        assert!(!audio_leaves_its_slot(2.3452, 2.345, own));
        assert!(!audio_leaves_its_slot(2.390, 2.345, own));
        // Ten packets 0.18 s ahead: the run runs past the next packet's start.
        let (own, run) = (0.024, 0.24);
        assert!(audio_comes_back(2.430, (2.166, 2.190), 2.372, run, own));
        assert!(
            !audio_comes_back(2.612, (2.166, 2.190), 2.372, run, own),
            "a gap"
        );
        // The next packet far past the previous one's end (it left room for many packets):
        // no telling which of the two is out of place.
        assert!(!audio_comes_back(4.0, previous, 6.441, own, own));
    }

    #[test]
    fn a_frame_shown_before_it_is_decoded_is_damaged() {
        let step = 0.04;
        assert!(shown_before_decoded(0.024, 1.4, step));
        assert!(shown_before_decoded(1.3, 1.4, step));
        assert!(
            !shown_before_decoded(1.39, 1.4, step),
            "within half a frame"
        );
        assert!(!shown_before_decoded(1.4, 1.4, 0.0));
        assert!(!shown_before_decoded(1.48, 1.4, step));
    }

    #[test]
    fn a_first_audio_run_ahead_of_the_packets_after_it_is_damaged() {
        let own = 0.024;
        // Bit 18 of the first PES: 4.383 s where the stream goes on from 1.71 s.
        let one = |leap: f64| (leap, own);
        assert!(first_audio_comes_back(one(4.383), 1.71, 0.024, own));
        assert!(first_audio_comes_back(one(5966.7), 1.71, 0.024, own));
        // Before the packets after it (a lone first packet, a gap): not judged.
        assert!(!first_audio_comes_back(one(0.014), 1.71, 0.024, own));
        // Following on, or the stream not going on from the next run (the damaged one).
        assert!(!first_audio_comes_back(one(1.686), 1.71, 0.024, own));
        assert!(!first_audio_comes_back(one(1.47), 0.254, 1.696, own));
        // Thirteen packets 0.18 s late: the next run starts inside them.
        let run = 13.0 * own;
        assert!(first_audio_comes_back((1.652, run), 1.782, 0.024, own));
        assert!(
            !first_audio_comes_back((1.47, run), 1.782, 0.024, own),
            "in step"
        );
    }

    #[test]
    fn a_frame_shown_seconds_after_it_is_decoded_is_told_by_the_next() {
        let step = 0.04;
        // Decoded at 2.343 s, shown at 6.519 s (4096 ms added), the next shown at 2.383 s.
        assert!(shown_long_after_decoded(6.519, 2.343, step));
        assert!(video_comes_back(2.383, 2.383, 6.519, step));
        // Three B-frames of reordering are no candidate.
        assert!(!shown_long_after_decoded(2.503, 2.343, step));
        // Every frame shown two seconds late: the next is no better.
        assert!(!video_comes_back(4.423, 2.383, 4.383, step));
    }

    #[test]
    fn a_damaged_frame_belongs_in_the_one_slot_its_neighbours_leave_free() {
        // The frame FFmpeg gave the decode time of the slot after its own.
        assert_eq!(
            free_slot(&[1103, 1143, 1263, 1303], 40.0, reorder_reach(1223, 40.0)),
            None,
            "two slots free"
        );
        assert_eq!(
            free_slot(&[1103, 1143, 1223, 1263], 40.0, reorder_reach(1223, 40.0)),
            Some(1183)
        );
        let reach = reorder_reach(2343, 40.0);
        assert_eq!(
            free_slot(&[2303, 2343, 2383, 2463, 2503], 40.0, reach.clone()),
            Some(2423)
        );
        // The B-frames of the last frame read are not read yet: their slots lie beyond.
        let window = [2303, 2343, 2383, 2463, 2503, 2543, 2583, 2623, 2663, 2783];
        assert_eq!(free_slot(&window, 40.0, reach.clone()), Some(2423));
        // 29.97 fps in milliseconds: a slot 66 or 67 ms wide.
        let step = 1001.0 / 30.0;
        assert_eq!(
            free_slot(&[0, 33, 67, 133, 167], step, reorder_reach(33, step)),
            Some(100)
        );
        // No slot free, or two: no telling.
        assert_eq!(
            free_slot(&[2303, 2343, 2383, 2423, 2463], 40.0, reach.clone()),
            None
        );
        assert_eq!(free_slot(&[2303, 2343, 2463, 2503], 40.0, reach), None);
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
