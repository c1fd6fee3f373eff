//! `VideoTimeline`: places decoded frames on the video stream's timeline. Timestamps that
//! are missing are filled in; a frame out of line with the frames around it (a damaged
//! timestamp) goes to the place they leave free; a timestamp seen again is a duplicated
//! frame (damaged data) and is dropped; one that goes backwards otherwise is a
//! discontinuity, repaired and counted. `gap_frames` counts the frames missing from a
//! constant-rate timeline.

use std::collections::VecDeque;

mod in_line;

/// How many recent timestamps are remembered to recognise duplicated frames.
const RECENT: usize = 64;

/// How many frames after one (in presentation order) are looked at to tell a damaged
/// timestamp from a jump of the whole timeline: a run of up to half as many damaged frames
/// in a row is put back in place.
pub const PLACING_LOOKAHEAD: usize = 4;

/// Where a decoded frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Keep it at this timestamp.
    At(i64),
    /// Drop it: its timestamp was already used by an earlier frame.
    Duplicate,
    /// No timestamp, and no frame before it had one: it goes before the first frame that
    /// has one (see [`VideoTimeline::settle_leading`] where none comes).
    Leading,
}

/// The timeline of one video stream, in its time base.
#[derive(Debug, Clone)]
pub struct VideoTimeline {
    step: i64,
    exact_step: f64,
    constant_rate: bool,
    last: Option<i64>,
    recent: VecDeque<i64>,
    /// Frames that had no timestamp and got one.
    pub filled: u64,
    /// Frames whose timestamp went backwards to a new value (repaired to follow on).
    pub discontinuities: u64,
    /// Frames dropped as duplicates, or out of line with no place left free for them.
    pub duplicates: u64,
    /// Frames out of line with the frames around them, put in the place those leave free:
    /// (their own timestamp, the one they got).
    pub moved: Vec<(i64, i64)>,
    /// Frames out of line with the frames around them that found no place free (dropped,
    /// and among `duplicates`).
    pub out_of_line_dropped: u64,
}

impl VideoTimeline {
    /// A timeline with frames `exact_step` units apart (a fraction where the time base does
    /// not divide the frame rate), of a stream that claims a `constant_rate` (or not).
    pub fn new(exact_step: f64, constant_rate: bool) -> Self {
        let exact_step = if exact_step.is_finite() && exact_step >= 1.0 {
            exact_step
        } else {
            1.0
        };
        Self {
            step: exact_step as i64,
            exact_step,
            constant_rate,
            last: None,
            recent: VecDeque::with_capacity(RECENT),
            filled: 0,
            discontinuities: 0,
            duplicates: 0,
            moved: Vec::new(),
            out_of_line_dropped: 0,
        }
    }

    /// Duration of one frame in time-base units.
    pub fn step(&self) -> i64 {
        self.step
    }

    /// Duration of one frame in time-base units, with its fraction.
    pub fn exact_step(&self) -> f64 {
        self.exact_step
    }

    /// The timestamp of the last frame placed, if any.
    pub fn last_placed(&self) -> Option<i64> {
        self.last
    }

    /// Whether the stream claims a constant frame rate.
    pub fn constant_rate(&self) -> bool {
        self.constant_rate
    }

    /// The leading frames (placed [`Placement::Leading`]) were given the timestamps up to
    /// `last` without a timed frame after them: the timeline goes on from there.
    pub fn settle_leading(&mut self, last: i64) {
        self.last = Some(last);
    }

    /// Place the next frame in presentation order, whose decoder timestamp is `pts`; `later`
    /// holds the timestamps of the frames that follow it (up to [`PLACING_LOOKAHEAD`], fewer
    /// at the end). A frame out of line with the frames around it (its timestamp leapt ahead
    /// of those after it, or back behind the one before, while they follow on from each
    /// other: `in_line::comes_back_at`) goes to the place between the two, and the frames
    /// after it keep their own times, rather than all of them being moved to follow it.
    pub fn place(&mut self, pts: Option<i64>, later: &[Option<i64>]) -> Placement {
        let timed: Vec<i64> = later.iter().flatten().copied().collect();
        if let (Some(p), Some(last)) = (pts, self.last)
            && let Some(next) =
                in_line::comes_back_at(p, last, &timed, self.exact_step, self.constant_rate)
        {
            let twin = self.recent.contains(&p) || later.contains(&Some(p));
            return self.put_between(p, last, next, twin);
        }
        let at = match (pts, self.last) {
            (Some(p), None) => p,
            (Some(p), Some(last)) if p > last => p,
            (Some(p), Some(last)) => {
                if self.recent.contains(&p) {
                    self.duplicates += 1;
                    return Placement::Duplicate;
                }
                self.discontinuities += 1;
                last + self.step
            }
            (None, None) => {
                self.filled += 1;
                return Placement::Leading;
            }
            (None, Some(last)) => {
                self.filled += 1;
                last + self.step
            }
        };
        if let Some(p) = pts {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(p);
        }
        self.last = Some(at);
        Placement::At(at)
    }

    /// Place a frame whose timestamp `p` is out of line between the last frame placed and
    /// the `next` that comes back in line: one frame after the last where the timeline
    /// leaves a free slot there (midway between them in a variable-rate stream), else it is
    /// dropped (its place is taken: a duplicate where another frame has its timestamp,
    /// `twin`, else damage with nowhere to go).
    fn put_between(&mut self, p: i64, last: i64, next: i64, twin: bool) -> Placement {
        let slot = in_line::slot_between(last, next, self.exact_step, self.constant_rate);
        let Some(at) = slot else {
            self.duplicates += 1;
            if !twin {
                self.out_of_line_dropped += 1;
            }
            return Placement::Duplicate;
        };
        self.moved.push((p, at));
        self.last = Some(at);
        Placement::At(at)
    }
}

/// Frames missing from the timeline of a constant-rate stream whose frames are
/// `exact_step` units apart, given every frame's timestamp in ascending order: each jump of
/// more than one and a half frames counts the frames that would fill it.
pub fn gap_frames(sorted: &[i64], exact_step: f64) -> u64 {
    gaps(sorted, exact_step).map(|(_, frames)| frames).sum()
}

/// The gaps of `sorted` (distinct presentation timestamps, ascending) on a timeline of frames
/// `exact_step` units apart (with its fraction: a 29.97 fps frame is 33.37 ms, and a pause
/// of 300 frames is 300 of them, not 303 of 33 ms): the timestamp each follows and the
/// frames missing there. A step of one unit or less says nothing.
pub fn gaps(sorted: &[i64], exact_step: f64) -> impl Iterator<Item = (i64, u64)> + '_ {
    sorted
        .windows(2)
        .filter(move |_| exact_step > 1.0)
        .map(|w| (w[0], w[1] - w[0]))
        .filter(move |&(_, delta)| delta as f64 > 1.5 * exact_step)
        .map(move |(at, delta)| (at, (delta as f64 / exact_step).round() as u64 - 1))
}

/// Whether two frames `delta` units apart are a whole number of frames (one or more) of
/// `exact_step` units apart, give or take a fifth of a frame or the time base's rounding:
/// a stream with spacings off that grid has a variable frame rate, whatever its container
/// claims, and its longer spacings are not missing frames.
pub fn on_grid(delta: i64, exact_step: f64) -> bool {
    let frames = delta as f64 / exact_step;
    let off = (frames - frames.round()).abs() * exact_step;
    frames.round() >= 1.0 && off <= (0.2 * exact_step).max(1.5)
}

/// The spacings of `sorted` (distinct timestamps, ascending) off the grid of frames
/// `exact_step` units apart ([`on_grid`]), those `ignored` (a splice's) aside, and how many
/// spacings there are.
pub fn off_grid(
    sorted: &[i64],
    exact_step: f64,
    ignored: impl Fn(i64, i64) -> bool,
) -> (usize, usize) {
    let off = sorted
        .windows(2)
        .filter(|w| !on_grid(w[1] - w[0], exact_step) && !ignored(w[0], w[1]))
        .count();
    (off, sorted.len().saturating_sub(1))
}

/// `gaps` less the slots that `untimed` video packets (no timestamp: their frames are
/// decoded and placed, but are not in the sorted timestamps) fill, taken from the first
/// gaps on; the gaps left keep their order.
pub fn less_untimed(gaps: impl Iterator<Item = (i64, u64)>, mut untimed: u64) -> Vec<(i64, u64)> {
    gaps.filter_map(|(at, frames)| {
        let filled = frames.min(untimed);
        untimed -= filled;
        (frames > filled).then_some((at, frames - filled))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl VideoTimeline {
        /// `place` with no frame known after it.
        fn place_alone(&mut self, pts: Option<i64>) -> Placement {
            self.place(pts, &[])
        }
    }

    #[test]
    fn untimed_frames_before_any_timed_one_wait_for_it() {
        let mut t = VideoTimeline::new(40.0, true);
        assert_eq!(t.place_alone(None), Placement::Leading);
        assert_eq!(t.place_alone(None), Placement::Leading);
        assert_eq!(t.place_alone(Some(1000)), Placement::At(1000));
        assert_eq!(t.place_alone(None), Placement::At(1040));
        assert_eq!(t.filled, 3);
        let mut t = VideoTimeline::new(40.0, true);
        assert_eq!(t.place_alone(None), Placement::Leading);
        t.settle_leading(0);
        assert_eq!(t.place_alone(None), Placement::At(40));
    }

    #[test]
    fn spacings_off_the_frame_grid_are_a_variable_rate() {
        // 30 fps in milliseconds: 33, 34 and 67 ms are one and two frames; 1 s is thirty.
        let step = 1000.0 / 30.0;
        for delta in [33, 34, 67, 100, 1000, 3333] {
            assert!(on_grid(delta, step), "{delta}");
        }
        // 42, 45 and 83 ms are a frame and a quarter, a third, two and a half: no whole
        // number of frames.
        for delta in [42, 45, 83, 15, 0] {
            assert!(!on_grid(delta, step), "{delta}");
        }
        // A time base as coarse as the frames (1/30 s) cannot show a variable rate.
        for delta in [1, 2, 7] {
            assert!(on_grid(delta, 1.0), "{delta}");
        }
        // Frames 24 to a second on a 30 fps grid, then pauses: 25 spacings, 24 off it.
        // Two damaged timestamps in a constant-rate run put four off; a splice's none.
        let mixed: Vec<i64> = (0..24).map(|i| i * 1000 / 24).chain([1100, 1500]).collect();
        assert_eq!(off_grid(&mixed, step, |_, _| false), (24, 25));
        let mut damaged: Vec<i64> = (0..300).map(|i| i * 1000 / 30).collect();
        damaged[100] += 12;
        damaged[200] += 12;
        assert_eq!(off_grid(&damaged, step, |_, _| false), (4, 299));
        assert_eq!(off_grid(&mixed, step, |_, _| true), (0, 25));
        let t = VideoTimeline::new(3003.0, true);
        assert_eq!((t.step(), t.exact_step()), (3003, 3003.0));
        let t = VideoTimeline::new(0.0, true);
        assert_eq!((t.step(), t.exact_step()), (1, 1.0));
    }

    #[test]
    fn an_untimed_packet_fills_a_slot_not_a_gap() {
        let pts = [0, 40, 120, 160, 280];
        assert_eq!(gaps(&pts, 40.0).collect::<Vec<_>>(), [(40, 1), (160, 2)]);
        assert_eq!(less_untimed(gaps(&pts, 40.0), 0), [(40, 1), (160, 2)]);
        assert_eq!(less_untimed(gaps(&pts, 40.0), 1), [(160, 2)]);
        assert_eq!(less_untimed(gaps(&pts, 40.0), 2), [(160, 1)]);
        assert!(less_untimed(gaps(&pts, 40.0), 5).is_empty());
    }

    #[test]
    fn gaps_duplicates_and_discontinuities() {
        let mut t = VideoTimeline::new(40.0, true);
        assert_eq!(t.place_alone(Some(0)), Placement::At(0));
        assert_eq!(t.place_alone(Some(40)), Placement::At(40));
        assert_eq!(t.place_alone(Some(160)), Placement::At(160));
        assert_eq!(t.place_alone(Some(40)), Placement::Duplicate);
        assert_eq!(t.duplicates, 1);
        assert_eq!(
            t.place_alone(Some(100)),
            Placement::At(200),
            "backwards to a new value"
        );
        assert_eq!(t.discontinuities, 1);
        assert_eq!(t.place_alone(None), Placement::At(240));
        assert_eq!(t.filled, 1);
    }

    /// Places of frames `pts` (in presentation order) with every later one known.
    fn placed(t: &mut VideoTimeline, pts: &[i64]) -> Vec<Placement> {
        (0..pts.len())
            .map(|i| {
                let later: Vec<Option<i64>> = (pts[i + 1..].iter())
                    .take(PLACING_LOOKAHEAD)
                    .map(|&p| Some(p))
                    .collect();
                t.place(Some(pts[i]), &later)
            })
            .collect()
    }

    #[test]
    fn a_frame_out_of_line_goes_between_its_neighbours_not_the_rest_after_it() {
        use Placement::{At, Duplicate};
        // One frame 16 ahead (its place is 120): taken as it was, every frame after it
        // went "backwards" and was moved to follow it.
        let mut t = VideoTimeline::new(40.0, true);
        let got = placed(&mut t, &[0, 40, 80, 760, 160, 200]);
        assert_eq!(got, [At(0), At(40), At(80), At(120), At(160), At(200)]);
        assert_eq!((t.moved.clone(), t.discontinuities), (vec![(760, 120)], 0));
        // Behind, on an earlier frame's time (not a duplicate: its own place is free), and
        // two in a row ahead; the next frame's own time taken by one ahead of it.
        let mut t = VideoTimeline::new(40.0, true);
        let got = placed(
            &mut t,
            &[0, 40, 0, 120, 840, 880, 240, 280, 360, 360, 400, 440],
        );
        let want = [0, 40, 80, 120, 160, 200, 240, 280, 320, 360, 400, 440];
        assert_eq!(got, want.map(At));
        assert_eq!(t.moved.len(), 4);
        assert_eq!((t.duplicates, t.discontinuities), (0, 0));
        // No place free: a repeated frame is a duplicate, a frame with nowhere to go is
        // dropped as one too, and said apart.
        let mut t = VideoTimeline::new(40.0, true);
        let got = placed(&mut t, &[0, 40, 40, 80, 600, 120]);
        assert_eq!(got, [At(0), At(40), Duplicate, At(80), Duplicate, At(120)]);
        assert_eq!((t.duplicates, t.out_of_line_dropped), (2, 1));
        // A variable-rate stream: midway.
        let mut t = VideoTimeline::new(40.0, false);
        assert_eq!(placed(&mut t, &[0, 50, 900, 100])[2], At(75));
    }

    #[test]
    fn a_jump_of_the_whole_timeline_is_not_out_of_line() {
        use Placement::At;
        // Forward (a pause), and back (a restart): the frames after go on from the jump.
        let mut t = VideoTimeline::new(40.0, true);
        let got = placed(&mut t, &[0, 40, 4000, 4040, 4080, 4120]);
        assert_eq!(got, [0, 40, 4000, 4040, 4080, 4120].map(At));
        let got = placed(&mut t, &[20, 60, 100]);
        assert_eq!(got, [4160, 4200, 4240].map(At));
        assert_eq!((t.moved.len(), t.discontinuities), (0, 3));
    }

    #[test]
    fn gaps_count_the_frames_that_would_fill_them() {
        assert_eq!(gap_frames(&[0, 40, 160, 200, 240], 40.0), 2);
        assert_eq!(gap_frames(&[0, 40, 80], 40.0), 0);
        assert_eq!(
            gap_frames(&[0, 50, 100], 40.0),
            0,
            "within one and a half frames"
        );
        assert_eq!(gap_frames(&[0, 5, 10], 1.0), 0, "no usable step");
        // 29.97 fps in milliseconds: a pause of 300 frames (10.01 s) is 299 missing, not
        // 302 as frames of a truncated 33 ms would make it.
        let step = 1001.0 / 30.0;
        assert_eq!(gap_frames(&[0, 10010, 10043], step), 299);
    }
}
