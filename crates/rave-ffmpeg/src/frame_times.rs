//! `FrameTimes`: which of a decoded frame's times places it on the timeline. FFmpeg's
//! best-effort time turns to the decode times once presentation times have gone back (or
//! repeated) more often than decode times: after one damaged timestamp, every later frame
//! of a stream with B-frames was moved by the decoder's delay (a frame, say), out of step
//! with its sound. Here, in a stream whose decode times trail its presentation times by
//! that delay, a frame's own presentation time is kept while such faults stay sparse
//! (single damaged timestamps, which the timeline puts back in line), and the best-effort
//! time is taken for good only once they are many (decode times copied into presentation
//! times, say). Where the two times agree (no reordering), FFmpeg's choice moves nothing
//! and stands.

/// Faults of the presentation times taken as sparse whatever the frames so far.
const SPARSE_FAULTS: u64 = 3;

/// Beyond `SPARSE_FAULTS`, at most one fault in this many frames is sparse.
const FRAMES_PER_FAULT: u64 = 30;

/// The times of a stream's decoded frames so far, in the order the decoder hands them out.
#[derive(Debug, Clone)]
pub struct FrameTimes {
    last_pts: Option<i64>,
    last_dts: Option<i64>,
    faulty_pts: u64,
    faulty_dts: u64,
    frames: u64,
    /// The presentation times were found unusable: best-effort times from then on.
    best_effort: bool,
    /// Half a frame, in the stream's time base.
    half_frame: f64,
    /// A frame's decode time trailed its presentation time by half a frame or more: the
    /// decode times are late by the decoder's delay.
    delayed: bool,
}

impl FrameTimes {
    /// The times of a stream whose frames are `frame_step` units of its time base apart.
    pub fn new(frame_step: f64) -> Self {
        Self {
            last_pts: None,
            last_dts: None,
            faulty_pts: 0,
            faulty_dts: 0,
            frames: 0,
            best_effort: false,
            half_frame: frame_step / 2.0,
            delayed: false,
        }
    }

    /// The frame step these times were made for.
    pub fn frame_step(&self) -> f64 {
        self.half_frame * 2.0
    }

    /// The time that places the next decoded frame, whose presentation time is `pts`, decode
    /// time (of its packet) `dts`, and FFmpeg's best-effort time `best_effort`.
    pub fn pick(
        &mut self,
        pts: Option<i64>,
        dts: Option<i64>,
        best_effort: Option<i64>,
    ) -> Option<i64> {
        self.frames += 1;
        let goes_back = |t: Option<i64>, last: &mut Option<i64>| {
            let back = t.is_some_and(|t| last.is_some_and(|l| t <= l));
            if t.is_some() {
                *last = t;
            }
            u64::from(back)
        };
        self.faulty_pts += goes_back(pts, &mut self.last_pts);
        self.faulty_dts += goes_back(dts, &mut self.last_dts);
        if let (Some(p), Some(d)) = (pts, dts) {
            self.delayed |= (d - p).abs() as f64 >= self.half_frame;
        }
        let ffmpeg_leaves_pts = self.faulty_pts > self.faulty_dts;
        let dense = ffmpeg_leaves_pts
            && self.faulty_pts > SPARSE_FAULTS
            && self.faulty_pts * FRAMES_PER_FAULT > self.frames;
        self.best_effort |= dense;
        match pts {
            Some(_) if ffmpeg_leaves_pts && !self.delayed => best_effort,
            Some(p) if !self.best_effort => Some(p),
            _ => best_effort,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_damaged_presentation_time_does_not_move_the_frames_after_it() {
        // Presentation times one frame behind the decode times (B-frame delay), frame 50's
        // damaged: FFmpeg's best effort takes the decode times from frame 51 on.
        let mut t = FrameTimes::new(1.0);
        for i in 0..100i64 {
            let pts = if i == 50 { 66 } else { i };
            let got = t.pick(Some(pts), Some(i + 1), Some(i + 1));
            assert_eq!(got, Some(pts), "frame {i}");
        }
    }

    #[test]
    fn presentation_times_going_back_throughout_give_way_to_the_best_effort() {
        // Decode times copied into presentation times: frames come out I B B P, times 0 2 3
        // 1, two frames after their packets are read.
        let mut t = FrameTimes::new(1.0);
        let pattern = [0i64, 2, 3, 1];
        let picked: Vec<Option<i64>> = (0..40i64)
            .map(|i| {
                let pts = (i / 4) * 4 + pattern[i as usize % 4];
                t.pick(Some(pts), Some(i - 2), Some(1000 + i))
            })
            .collect();
        // The fourth fault (frame 15) is too many for the frames so far.
        assert_eq!(picked[14], Some(15));
        assert!(
            picked[15..]
                .iter()
                .zip(15..)
                .all(|(p, i)| *p == Some(1000 + i))
        );
        // No presentation time: the best effort.
        assert_eq!(FrameTimes::new(1.0).pick(None, Some(5), Some(5)), Some(5));
    }

    #[test]
    fn without_reordering_ffmpegs_choice_stands() {
        // Frames 3000 apart whose decode times equal their presentation times, but for a
        // tick where two presentation times repeat: the decode time tells them apart.
        let mut t = FrameTimes::new(3000.0);
        let got: Vec<Option<i64>> = [(0, 0), (3000, 3000), (3000, 3001), (6000, 6000)]
            .iter()
            .map(|&(p, d)| t.pick(Some(p), Some(d), Some(d)))
            .collect();
        assert_eq!(got, [Some(0), Some(3000), Some(3001), Some(6000)]);
    }
}
