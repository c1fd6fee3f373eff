//! The ledger's judgement of a packet whose timestamp leaps (the arithmetic is
//! `outliers`): whether it is a candidate, whether its stream's next packets confirm the
//! damage, and where the damaged packet goes. Besides leaps ahead, two damages with no
//! packet before them to show them are told by the packets after: a video frame shown
//! before it is decoded, and an audio stream's first packets ahead of the rest.

use ffmpeg_next::Packet;

use super::stream_tally::{Role, StreamTally};
use super::{IntegrityLedger, RUN_PACKETS, SLOT_NEIGHBOURS, outliers};

impl IntegrityLedger {
    /// Whether `packet`, of a video or audio stream, leaps out of all proportion ahead of
    /// its stream and of the other video and audio streams in step with it, or (audio)
    /// starts further past its stream's previous packet than the stream ever gaps, or
    /// (video) is shown before it is decoded: a candidate for a damaged timestamp, confirmed
    /// by [`IntegrityLedger::confirms_leap`]. An audio stream's first packet is always one
    /// (once per stream: nothing before it shows a leap, the packets after it do), where
    /// the reading starts at the file's start.
    pub fn leaps_ahead(&self, packet: &Packet) -> bool {
        let index = packet.stream();
        let judged = |t: &StreamTally| matches!(t.role, Role::Video | Role::Audio);
        let Some(t) = self.streams.get(index).filter(|t| judged(t)) else {
            return false;
        };
        let Some(at) = t.time_s(packet) else {
            return false;
        };
        let near = match t.role {
            Role::Audio if t.latest_s.is_none() => self.from_start,
            Role::Audio => t.expected_next_s().is_some_and(|expected| {
                let own_s = t.length_of(packet) as f64 * t.unit_s;
                outliers::audio_out_of_step(at, expected, own_s)
            }),
            _ => t.shown_and_decoded_s(packet).is_some_and(|(pts, dts)| {
                let step_s = t.typical_s();
                outliers::shown_long_after_decoded(pts, dts, step_s)
                    || outliers::shown_before_decoded(pts, dts, step_s)
                    || self.first_idr(packet)
                    || t.latest_s
                        .is_some_and(|previous| outliers::decoded_long_after(dts, previous, step_s))
            }),
        };
        let others = (self.streams.iter().enumerate())
            .filter(|&(i, o)| i != index && judged(o))
            .filter_map(|(_, o)| o.latest_s);
        near || outliers::leaps_ahead(at, t.latest_s, others)
    }

    /// Whether the next packets of the stream of `leapt` (a [`leaps_ahead`] candidate),
    /// `later` (up to [`SLOT_NEIGHBOURS`] of them for video), show that its time was
    /// damaged: the first comes back to where the stream was before it. A video frame
    /// only shown long after it is decoded must also have been shown before every later
    /// frame, and have one slot left free for it: a frame after a pause in the picture
    /// (decoded before the pause, shown after it, the B-frames decoded next shown before
    /// it) leaves none, and the frames after it go on past the pause. A frame shown before
    /// it is decoded needs only the frames decoded next to be in order themselves; an audio
    /// stream's first packets, the stream's next packet to go back before them
    /// (`first_audio_run`).
    ///
    /// [`leaps_ahead`]: IntegrityLedger::leaps_ahead
    pub fn confirms_leap(&self, leapt: &Packet, later: &[&Packet]) -> bool {
        let t = &self.streams[leapt.stream()];
        let Some(next_packet) = later.first() else {
            return false; // not found within the read-ahead: the leap is let be
        };
        let (Some(leap), Some(next)) = (t.time_s(leapt), t.time_s(next_packet)) else {
            return false;
        };
        let far = t
            .latest_s
            .is_some_and(|previous| outliers::comes_back(next, previous, leap));
        let near = match t.role {
            Role::Audio => {
                audio_run(t, leapt, later).is_some() || first_audio_run(t, leapt, later).is_some()
            }
            _ if shown_early(t, leapt) => {
                !later.is_empty() && !later.iter().any(|p| shown_early(t, p))
            }
            _ if self.first_idr(leapt) => {
                let shown = leapt.pts().unwrap_or(i64::MIN);
                let shown_before = |p: &&Packet| p.pts().is_some_and(|q| q < shown);
                later.iter().any(shown_before) && self.video_slot(leapt, later).is_some()
            }
            _ => match (
                t.shown_and_decoded_s(leapt),
                t.shown_and_decoded_s(next_packet),
            ) {
                (Some((leap_pts, _)), Some((pts, dts))) => {
                    let shown_before = |p: &&Packet| {
                        t.shown_and_decoded_s(p)
                            .is_none_or(|(shown, _)| shown < leap_pts)
                    };
                    // A full window: a stream that ends within it may have paused on its
                    // last frames (a frame dropped before leaves a slot free as well).
                    later.len() == SLOT_NEIGHBOURS
                        && outliers::video_comes_back(pts, dts, leap_pts, t.typical_s())
                        && later.iter().all(shown_before)
                        && self.video_slot(leapt, later).is_some()
                }
                _ => false,
            },
        };
        far || near
    }

    /// Whether `packet` is the video stream's first, an H.264 IDR picture: a frame decoded
    /// after it shown before it says its presentation time is damaged (a candidate; nothing
    /// before it shows that).
    fn first_idr(&self, packet: &Packet) -> bool {
        packet.stream() == self.video
            && self.from_start
            && packet.is_key()
            && self.streams[self.video].latest_s.is_none()
            && self.leading.check().idr(packet.data().unwrap_or_default())
    }

    /// Whether stream `index` is the video stream read.
    pub fn is_video(&self, index: usize) -> bool {
        index == self.video
    }

    /// `packet` leapt and its stream came back (`later`: its stream's next packets, the
    /// first of them at least): damage. A video frame is put back in the one slot its
    /// neighbours leave free on the frame grid, or loses its timestamps (it fills the slot
    /// the decoding finds); an audio packet is put back between its stream's previous
    /// packet and the next when they leave room for it (`audio_slot`), and is left out
    /// otherwise. Whether to pass it on; before its `admit`.
    pub fn on_leap(&mut self, packet: &mut Packet, later: &[&Packet]) -> bool {
        let index = packet.stream();
        let t = &self.streams[index];
        let from = t.latest_s.unwrap_or(0.0);
        let video = t.role == Role::Video;
        let first = t.latest_s.is_none();
        let first_audio = !video && first;
        let at = (from - self.start_s).max(0.0);
        let start = packet.pts().or(packet.dts());
        let slot = match (video, first_audio) {
            (true, _) => self.video_slot(packet, later),
            (false, false) => audio_slot(t, packet, later),
            (false, true) => first_audio_run(t, packet, later).map(|(_, slot)| slot),
        };
        let what = leap_said(t, packet, (slot, self.first_idr(packet)), at);
        let outcome = match (video, slot) {
            (true, Some(_)) => "frame is put back in the one place its neighbours leave free",
            (true, None) => "frame is kept untimed (it fills its slot)",
            (false, Some(_)) if first_audio => "packet is put back before the packets after it",
            (false, Some(_)) => "packet is put back between its neighbours",
            (false, None) => "packet is left out",
        };
        self.note(|| format!("stream #{index}: {what}: it is damaged, so the {outcome}"));
        if first && let Some(slot) = slot {
            self.corrected_starts.push((index, slot));
        }
        match (video, slot) {
            (true, Some(slot)) => {
                packet.set_pts(Some(slot));
                packet.set_dts(packet.dts().filter(|&d| d <= slot));
                // An MP4 demuxer discards a frame whose damaged time fell past its edit
                // list's end: back among shown frames, it is shown.
                if later
                    .first()
                    .is_some_and(|n| !crate::sys::packet_is_discarded(n))
                {
                    crate::sys::keep_packet(packet);
                }
            }
            (true, None) => {
                packet.set_pts(None);
                packet.set_dts(None);
            }
            (false, Some(slot)) => {
                let shift = start.map_or(0, |s| slot - s);
                packet.set_pts(packet.pts().map(|p| p + shift));
                packet.set_dts(packet.dts().map(|d| d + shift));
            }
            (false, None) => {
                self.packets_dropped += 1;
                return false;
            }
        }
        self.corrupt_packets += 1;
        true
    }

    /// The one slot of a constant-rate video's frame grid that the frames around the
    /// damaged `packet` leave free within a reordering of its decode time: the
    /// presentation times of the video packets read before it (the latest
    /// [`SLOT_NEIGHBOURS`]) and of those `later` (not themselves shown long after they are
    /// decoded). None where those are off a constant rate's grid, the packet has no decode
    /// time or no single slot is free.
    fn video_slot(&self, packet: &Packet, later: &[&Packet]) -> Option<i64> {
        let dts = packet.dts()?;
        let t = &self.streams[self.video];
        let step_s = t.typical_s();
        // A decode time that leapt with the presentation time (an FLV tag's timestamp) says
        // nothing: the frame was decoded after the one before it.
        let dts = match t.latest_s {
            Some(previous)
                if outliers::decoded_long_after(dts as f64 * t.unit_s, previous, step_s) =>
            {
                (previous / t.unit_s).round() as i64 + t.typical
            }
            _ => dts,
        };
        let sound = |p: &&&Packet| {
            t.shown_and_decoded_s(p)
                .is_none_or(|(pts, dts)| !outliers::shown_long_after_decoded(pts, dts, step_s))
        };
        let mut near: Vec<i64> = (self.video_pts.iter().rev().take(SLOT_NEIGHBOURS).copied())
            .chain(later.iter().filter(sound).filter_map(|p| p.pts()))
            .collect();
        near.sort_unstable();
        near.dedup();
        // The frames around it keep a constant rate (whatever FFmpeg's probe, which the
        // damaged time may have misled, estimated for the stream).
        let step = self.timeline.exact_step();
        if !near
            .windows(2)
            .all(|w| crate::timeline::on_grid(w[1] - w[0], step))
        {
            return None;
        }
        let reach = outliers::reorder_reach(dts, step);
        // The stream's first frame: no frame before it bounds its slot, the first of the
        // grid below the frames after it (which leave none free among them).
        let first =
            self.video_pts.is_empty() && outliers::free_slot(&near, step, reach.clone()).is_none();
        match near.first() {
            Some(&lowest) if first => {
                Some(lowest - step.round() as i64).filter(|s| reach.contains(s))
            }
            _ => outliers::free_slot(&near, step, reach),
        }
    }
}

/// What a damaged `packet` of the stream `t` did, said after `at` seconds of the input,
/// given the `slot` it goes to (time base) and whether it is the stream's first frame, an
/// H.264 IDR picture (`first_idr`): how far its timestamp leapt ahead of (or back behind)
/// its stream, past the end of the audio packet before it; for video, in decode time or in
/// presentation time after its decoding, or how far it is shown before it is decoded; for
/// a stream's first audio packet or first IDR picture, how much later than the packets
/// after it put it.
fn leap_said(
    t: &StreamTally,
    packet: &Packet,
    (slot, first_idr): (Option<i64>, bool),
    at: f64,
) -> String {
    let from = t.latest_s.unwrap_or(0.0);
    let time = t.time_s(packet).unwrap_or(from);
    let shown_decoded = t.shown_and_decoded_s(packet);
    if t.role == Role::Video && shown_early(t, packet) {
        let early = shown_decoded.map_or(0.0, |(p, d)| d - p);
        return format!("a frame after {at:.3} s is shown {early:.3} s before it is decoded");
    }
    let later_than = |own: i64, slot: i64| (own - slot) as f64 * t.unit_s;
    match (packet.pts().or(packet.dts()), slot) {
        (Some(own), Some(slot)) if first_idr && own > slot => {
            let late = later_than(own, slot);
            return format!(
                "its first frame, an IDR picture (none after it is shown before it), is timed {late:.3} s later than the frames after it put it"
            );
        }
        (Some(own), Some(slot)) if t.role == Role::Audio && t.latest_s.is_none() => {
            let late = later_than(own, slot);
            return format!(
                "its first packet is timed {late:.3} s later than the packets after it put it"
            );
        }
        _ => {}
    }
    let leap = match t.role {
        Role::Video => (time - from).max(shown_decoded.map_or(0.0, |(p, d)| p - d)),
        _ => time - t.expected_next_s().unwrap_or(from),
    };
    let way = match leap < 0.0 {
        true => "back behind",
        false => "ahead of",
    };
    let leap = leap.abs();
    format!(
        "a packet's timestamp leaps {leap:.3} s {way} its stream after {at:.3} s, and the next comes back"
    )
}

/// Whether a video `packet` of the stream `t` is shown before it is decoded
/// (`outliers::shown_before_decoded`).
fn shown_early(t: &StreamTally, packet: &Packet) -> bool {
    t.shown_and_decoded_s(packet)
        .is_some_and(|(pts, dts)| outliers::shown_before_decoded(pts, dts, t.typical_s()))
}

/// The packets, counted from an audio stream's first `packet`, that came out of the same
/// read as it (one MPEG-TS PES, one Matroska lace: `read_run`), at most [`RUN_PACKETS`];
/// and where the first packet belongs, in time-base units: as many packets before the next
/// one, where that starts before the run's last and the next read goes on from its own
/// (`outliers::first_audio_comes_back`): the stream goes on from there. None for a packet
/// of unknown length, and where the next packet follows on (a stream whose first packets
/// are in step: a damaged header further on is judged in its turn) or its own read is not
/// followed on from (it is the damaged one).
fn first_audio_run(t: &StreamTally, packet: &Packet, later: &[&Packet]) -> Option<(usize, i64)> {
    let own = match t.length_of(packet) {
        0 => return None,
        own => own,
    };
    let own_s = own as f64 * t.unit_s;
    let run = read_run(t, packet, later)?;
    let next = later.get(run - 1)?;
    let next_s = t.time_s(next)?;
    let next_run = read_run(t, next, &later[run..])?;
    let then = t.time_s(later.get(run - 1 + next_run)?)?;
    let next_last = next_s + (next_run - 1) as f64 * own_s;
    let (leap, run_s) = (t.time_s(packet)?, run as f64 * own_s);
    if !outliers::first_audio_comes_back((leap, run_s), next_s, then - next_last, own_s) {
        return None;
    }
    let next_start = next.pts().or(next.dts())?;
    Some((run, next_start - own * run as i64))
}

/// How many packets, `packet` and those of `later` after it, came out of one read (no byte
/// position of their own, or its own: one MPEG-TS PES split into frames, one Matroska
/// lace) following on from each other, at most [`RUN_PACKETS`]. None for a packet of
/// unknown time.
fn read_run(t: &StreamTally, packet: &Packet, later: &[&Packet]) -> Option<usize> {
    let own_s = t.length_of(packet) as f64 * t.unit_s;
    let start = t.time_s(packet)?;
    let same_read = |p: &Packet| p.position() < 0 || p.position() == packet.position();
    let mut run = 1;
    for p in later.iter().take(RUN_PACKETS - 1) {
        let in_place = start + run as f64 * own_s;
        let on = t
            .time_s(p)
            .is_some_and(|at| (at - in_place).abs() <= own_s / 2.0);
        if !same_read(p) || !on {
            break;
        }
        run += 1;
    }
    Some(run)
}

/// The packets, counted from a leapt audio `packet` of the stream `t`, up to the first of
/// `later` (its stream's next packets) that comes back: those between moved with it, by
/// the same amount give or take half a packet (the dozen AAC frames of one MPEG-TS PES
/// whose header is damaged, each timed from it), at most [`RUN_PACKETS`]. None where no
/// packet comes back (`outliers::audio_comes_back`) and, on a stream whose packets follow
/// on exactly, none takes up the run's place (`outliers::audio_leaves_its_slot`).
fn audio_run(t: &StreamTally, packet: &Packet, later: &[&Packet]) -> Option<usize> {
    let (previous, expected) = (t.latest_s?, t.expected_next_s()?);
    let own = t.length_of(packet) as f64 * t.unit_s;
    let leap = t.time_s(packet)?;
    let moved_by = leap - expected;
    for (k, p) in later.iter().enumerate() {
        let at = t.time_s(p)?;
        let in_place = expected + (k + 1) as f64 * own;
        if k + 1 < RUN_PACKETS && (at - in_place - moved_by).abs() <= own / 2.0 {
            continue;
        }
        let run = k + 1;
        let neighbours = (previous, expected);
        let run_s = run as f64 * own;
        let grid = t.on_grid()
            || (t.on_grid_from_start()
                && follow_on_exactly(t, &later[k..], outliers::GRID_PACKETS as usize));
        let back = outliers::audio_comes_back(at, neighbours, leap, run_s, t.typical_s())
            || (grid && outliers::audio_leaves_its_slot(at, expected, run_s));
        return back.then_some(run);
    }
    None
}

/// Whether the first `n` of `packets` (an audio stream's next ones, in order) each start
/// where the one before ended, within `outliers::GRID_S`: the stream's grid, shown by the
/// packets after one off it where the stream has only started.
fn follow_on_exactly(t: &StreamTally, packets: &[&Packet], n: usize) -> bool {
    let ends_where_next_starts = |w: &[&Packet]| match (t.time_s(w[0]), t.time_s(w[1])) {
        (Some(a), Some(b)) => {
            (a + t.length_of(w[0]) as f64 * t.unit_s - b).abs() <= outliers::GRID_S
        }
        _ => false,
    };
    packets.len() > n && packets.windows(2).take(n).all(ends_where_next_starts)
}

/// Where a leapt audio `packet` of the stream `t` belongs, in time-base units: between
/// where the stream's previous packet ended and where the packet that comes back after it
/// (`audio_run`) starts, when that leaves room for it and the packets that moved with it
/// (their lengths, within half a packet). Both ends are rounded times (FFmpeg's Matroska
/// counts 21.33 ms AAC packets in whole milliseconds), so the slot is the middle of the two
/// readings.
fn audio_slot(t: &StreamTally, packet: &Packet, later: &[&Packet]) -> Option<i64> {
    let run = audio_run(t, packet, later)?;
    let end = t.expected_end()?;
    let next = later.get(run - 1)?;
    let next_start = next.pts().or(next.dts())?;
    let own = t.length_of(packet);
    let room = next_start - end;
    let needed = own * run as i64;
    let fits = own > 0 && (room - needed).abs() <= own / 2;
    fits.then(|| end + (room - needed + 1).div_euclid(2))
}
