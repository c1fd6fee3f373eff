//! Tests of the splicer: restarts, the parts' last packets, B-frame video, damaged times.

use super::*;

fn packet(stream: usize, dts: i64, duration: i64) -> Packet {
    timed(Packet::empty(), stream, dts, duration)
}

/// `p` of `stream`, decoded and shown at `dts`, `duration` long.
fn timed(mut p: Packet, stream: usize, dts: i64, duration: i64) -> Packet {
    p.set_stream(stream);
    p.set_dts(Some(dts));
    p.set_pts(Some(dts));
    p.set_duration(duration);
    p
}

/// Place packets (stream, timestamp in ms, duration in ms); their timestamp afterwards,
/// and the resets found.
fn run(s: &mut TimestampSplicer, packets: &[(usize, i64, i64)]) -> (Vec<i64>, Vec<f64>) {
    let tb = Rational::new(1, 1000);
    let mut resets = Vec::new();
    let placed = packets
        .iter()
        .map(|&(stream, dts, dur)| {
            let mut p = packet(stream, dts, dur);
            resets.extend(s.place(&mut p, tb));
            p.dts().unwrap()
        })
        .collect();
    (placed, resets)
}

/// Place packets (stream, timestamp in ms, byte position), each `duration` ms long; their
/// presentation time afterwards, and the resets found.
fn place_read(
    s: &mut TimestampSplicer,
    order: &[(usize, i64, isize)],
    duration: i64,
) -> (Vec<i64>, Vec<f64>) {
    let tb = Rational::new(1, 1000);
    let mut resets = Vec::new();
    let placed = order
        .iter()
        .map(|&(stream, ts, pos)| {
            let mut p = packet(stream, ts, duration);
            p.set_position(pos);
            resets.extend(s.place(&mut p, tb));
            p.pts().unwrap()
        })
        .collect();
    (placed, resets)
}

#[test]
fn a_restart_continues_every_stream_from_where_the_file_was() {
    let mut s = TimestampSplicer::new(vec![true, true], true);
    // Two 2-second recordings joined: video (0) every 40 ms, audio (1) every 20 ms.
    let (got, resets) = run(
        &mut s,
        &[
            (0, 1400, 40),
            (1, 1400, 20),
            (0, 3360, 40),
            (1, 3380, 20),
            (0, 1400, 40),
            (1, 1380, 20),
            (0, 1440, 40),
        ],
    );
    assert_eq!(resets, vec![3.4]);
    assert_eq!(got[..4], [1400, 1400, 3360, 3380]);
    assert_eq!(got[4], 3400, "the new part starts where the file ended");
    assert_eq!(
        got[5], 3400,
        "audio that starts earlier stays after its own last packet"
    );
    assert_eq!(got[6], 3440);
}

#[test]
fn the_first_parts_last_packets_handed_out_after_the_restart_keep_their_place() {
    let mut s = TimestampSplicer::new(vec![true, true], true);
    // (stream, timestamp ms, byte position): the first part's video runs to 3360 ms,
    // its sound to 3380 ms; the second part's sound (at byte 1000) starts at 1400 ms,
    // then FFmpeg hands out the first part's last frame (read at byte 900), then the
    // second part's video, 2 s after its sound.
    let order = [
        (0, 3320, 800),
        (1, 3380, 850),
        (1, 1400, 1000),
        (1, 1420, -1),
        (0, 3360, 900),
        (0, 3400, 2000),
    ];
    let (placed, resets) = place_read(&mut s, &order, 20);
    assert_eq!(resets, vec![3.4]);
    assert_eq!(
        placed[2..4],
        [3400, 3420],
        "the sound goes on at the file's end"
    );
    assert_eq!(
        placed[4], 3360,
        "the first part's last frame stays in its part"
    );
    assert_eq!(
        placed[5], 5400,
        "the picture 2 s after the sound, as in its part"
    );
}

#[test]
fn a_parts_last_frame_without_a_byte_position_that_goes_on_in_step_stays_in_its_part() {
    let mut s = TimestampSplicer::new(vec![true, true], true);
    let tb = Rational::new(1, 1000);
    // AC-3 (1) every 32 ms: the parser holds the first part's last frame back until the
    // next PES of its PID, after the second part's first video (at byte 1000).
    let order = [
        (0, 3960, 800),
        (1, 3936, 850),
        (0, 1400, 1000),
        (1, 3968, -1),
    ];
    let (placed, _) = place_read(&mut s, &order, 32);
    assert_eq!(
        placed[3], 3968,
        "the held-back frame stays in the first part"
    );
    let mut next = packet(1, 1400, 32);
    next.set_position(1100);
    assert!(
        !s.shows_reset(&next, tb),
        "the second part's sound is no second restart"
    );
}

#[test]
fn b_frame_video_is_joined_on_presentation_times() {
    let mut s = TimestampSplicer::new(vec![true], true);
    let tb = Rational::new(1, 1000);
    // Part one ends with a frame shown at 2640 ms; part two's first packet is decoded at
    // 1400 ms and shown at 1480 ms.
    let mut last = packet(0, 2560, 40);
    last.set_pts(Some(2640));
    s.place(&mut last, tb);
    let mut first = packet(0, 1400, 40);
    first.set_pts(Some(1480));
    s.place(&mut first, tb);
    assert_eq!(first.pts(), Some(2680), "shown right after the last frame");
    assert_eq!(first.dts(), Some(2600));
}

#[test]
fn a_b_frame_shown_long_before_its_reference_is_no_restart() {
    // A pause of 1.04 s in a variable-rate recording: the frame after it (shown at
    // 3480 ms) is decoded before the three B-frames shown before the pause.
    let mut s = TimestampSplicer::new(vec![true], true);
    let tb = Rational::new(1, 1000);
    let order = [
        (2280, 2320),
        (2320, 3480),
        (2360, 2400),
        (2400, 2360),
        (2440, 2440),
    ];
    for (dts, pts) in order {
        let mut p = packet(0, dts, 40);
        p.set_pts(Some(pts));
        assert_eq!(s.place(&mut p, tb), None, "{dts}/{pts}");
        assert_eq!((p.dts(), p.pts()), (Some(dts), Some(pts)));
    }
}

#[test]
fn reordering_and_small_steps_are_left_alone() {
    let mut s = TimestampSplicer::new(vec![true, false], true);
    let (got, resets) = run(
        &mut s,
        &[
            (0, 0, 40),
            (0, 40, 40),
            (0, 10, 40),
            (0, 5000, 40),
            (1, 90_000, 0),
        ],
    );
    assert_eq!(
        got,
        [0, 40, 10, 5000, 90_000],
        "a data stream's timestamps reveal nothing"
    );
    assert!(resets.is_empty());
    let mut off = TimestampSplicer::new(vec![true], false);
    assert_eq!(run(&mut off, &[(0, 5000, 40), (0, 0, 40)]).0, [5000, 0]);
}

#[test]
fn a_jump_forward_of_more_than_ten_seconds_is_a_restart() {
    let mut s = TimestampSplicer::new(vec![true], true);
    let (got, resets) = run(
        &mut s,
        &[(0, 0, 40), (0, 40, 40), (0, 60_000, 40), (0, 60_040, 40)],
    );
    assert_eq!(got, [0, 40, 80, 120]);
    assert_eq!(resets.len(), 1);
}

#[test]
fn a_presentation_time_before_the_decode_time_or_long_after_is_not_in_step() {
    let tb = Rational::new(1, 90_000);
    let frame = |pts: i64, dts: i64| {
        let mut p = packet(0, dts, 3600);
        p.set_pts(Some(pts));
        p
    };
    let shown = |p: &Packet| TimestampSplicer::shown_in_step_us(p, tb);
    assert_eq!(shown(&frame(133_200, 126_000)), Some(1_480_000));
    assert_eq!(shown(&frame(126_000, 126_000)), Some(1_400_000));
    assert_eq!(shown(&frame(2_128, 126_000)), None, "bit 17 of a PES's PTS");
    assert_eq!(shown(&frame(537_004_112, 126_000)), None, "bit 29");
    let mut untimed = frame(0, 0);
    untimed.set_dts(None);
    untimed.set_pts(Some(9_000));
    assert_eq!(
        shown(&untimed),
        Some(100_000),
        "no decode time to hold it to"
    );
}

#[test]
fn a_streams_first_packet_is_no_restart() {
    let mut s = TimestampSplicer::new(vec![true, true, true], true);
    // Audio (1) written 1.6 s ahead of the video (0), whose encoder looked ahead; a
    // second audio track (2) that starts 15 s in.
    let (got, resets) = run(
        &mut s,
        &[
            (1, 1400, 20),
            (1, 3000, 20),
            (0, 1340, 40),
            (0, 1380, 40),
            (1, 3020, 20),
            (2, 16_400, 20),
            (0, 1420, 40),
        ],
    );
    assert!(resets.is_empty(), "{resets:?}");
    assert_eq!(got, [1400, 3000, 1340, 1380, 3020, 16_400, 1420]);
}

/// A packet (stream, ms, byte position) with `data`, one 20 ms long.
fn read_packet(stream: usize, ms: i64, pos: isize, data: &[u8]) -> Packet {
    let mut p = timed(Packet::copy(data), stream, ms, 20);
    p.set_position(pos);
    p
}

#[test]
fn a_stream_stepping_back_into_its_last_packets_is_measured_to_their_end() {
    let tb = Rational::new(1, 1000);
    let mut s = TimestampSplicer::new(vec![true, true], true);
    for (i, ms) in [1000, 1020, 1040].into_iter().enumerate() {
        let mut p = read_packet(1, ms, 100 * i as isize, &[i as u8; 8]);
        s.place(&mut p, tb);
    }
    // 50 ms back from where the last packet ends (1060), new bytes, a PES of its own.
    let stepped = read_packet(1, 1010, 400, &[9; 8]);
    assert_eq!(s.steps_back(&stepped, tb), Some(50_000));
    // Its stream's last packet again (duplicated data, or cut short), a frame of a PES read before
    // (no position of its own), one a second and more back: no step.
    assert_eq!(s.steps_back(&read_packet(1, 1040, 400, &[2; 8]), tb), None);
    assert_eq!(s.steps_back(&read_packet(1, 1040, 400, &[2; 3]), tb), None);
    assert_eq!(s.steps_back(&read_packet(1, 1010, -1, &[9; 8]), tb), None);
    assert_eq!(s.steps_back(&read_packet(1, 20, 400, &[9; 8]), tb), None);
    // A packet going on from the last one is none either.
    assert_eq!(s.steps_back(&read_packet(1, 1060, 400, &[9; 8]), tb), None);
    // Moved on by the step, the stream goes on from its last packet.
    s.step_on(1, 50_000);
    let mut p = stepped;
    assert_eq!(s.place(&mut p, tb), None, "no restart");
    assert_eq!(p.dts(), Some(1060));
    assert_eq!(s.on_timeline_s(1, 1_030_000), 1.08);
}

#[test]
fn no_step_back_into_a_pes_out_of_line() {
    let tb = Rational::new(1, 1000);
    let mut s = TimestampSplicer::new(vec![true], true);
    // The third PES starts 90 ms late (its header damaged): the fourth, in line with the
    // first two, goes back into it, and is no step.
    for (i, ms) in [1000, 1020, 1130].into_iter().enumerate() {
        let mut p = read_packet(0, ms, 100 * i as isize, &[i as u8; 8]);
        s.place(&mut p, tb);
    }
    assert_eq!(s.steps_back(&read_packet(0, 1060, 400, &[9; 8]), tb), None);
    // A stream's first PES is in line with nothing.
    let mut s = TimestampSplicer::new(vec![true], true);
    s.place(&mut read_packet(0, 1000, 0, &[1; 8]), tb);
    assert_eq!(s.steps_back(&read_packet(0, 990, 100, &[9; 8]), tb), None);
}
