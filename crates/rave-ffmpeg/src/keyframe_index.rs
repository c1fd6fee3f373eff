//! `KeyframeIndex`: the presentation timestamps of every video frame of an input and of the
//! keyframes where decoding can start, read from its packets without decoding; what a job is
//! planned on (segments begin at keyframes).

use ffmpeg_next::Rational;

/// The video frames and keyframes of one input, in presentation order.
#[derive(Debug, Clone)]
pub struct KeyframeIndex {
    time_base: Rational,
    frame_rate: Rational,
    frame_pts: Vec<i64>,
    keyframe_pts: Vec<i64>,
    /// Video packets without a presentation timestamp.
    untimed: u64,
    /// Times the input's timestamps restarted or a stream's stepped back (joined transport
    /// streams): a part found by its timestamps would not be the one planned.
    resets: usize,
    /// The codec declares that frames are reordered (B-frames: presentation differs from
    /// decode order).
    reorders: bool,
    /// A packet's presentation timestamp differed from its decode timestamp.
    pts_differs_from_dts: bool,
    /// Video packets seen with both timestamps.
    timed_twice: u64,
    /// Video packets seen with a presentation timestamp, in decode order: how many, the
    /// last one's, and whether one went back (as B-frames make them).
    timed: u64,
    last_pts: Option<i64>,
    pts_went_back: bool,
}

impl KeyframeIndex {
    /// An empty index of a video stream with this time base and nominal rate.
    pub fn new(time_base: Rational, frame_rate: Rational) -> Self {
        Self {
            time_base,
            frame_rate,
            frame_pts: Vec::new(),
            keyframe_pts: Vec::new(),
            untimed: 0,
            resets: 0,
            reorders: false,
            pts_differs_from_dts: false,
            timed_twice: 0,
            timed: 0,
            last_pts: None,
            pts_went_back: false,
        }
    }

    /// The codec declares that it reorders frames (its parameters' `video_delay`).
    pub fn set_reorders(&mut self, reorders: bool) {
        self.reorders = reorders;
    }

    /// Count one video packet (they come in decode order) with its presentation and decode
    /// timestamps; a `discarded` one (decoded as a reference only, before an edit list's
    /// start) yields no frame, but its times still show the order they run in.
    pub fn add(&mut self, (pts, dts): (Option<i64>, Option<i64>), keyframe: bool, discarded: bool) {
        if let (Some(p), Some(d)) = (pts, dts) {
            self.timed_twice += 1;
            self.pts_differs_from_dts |= p != d;
        }
        if let Some(p) = pts {
            self.timed += 1;
            self.pts_went_back |= self.last_pts.is_some_and(|last| p < last);
            self.last_pts = Some(p);
        }
        if discarded {
            return;
        }
        match pts {
            Some(t) => {
                self.frame_pts.push(t);
                if keyframe {
                    self.keyframe_pts.push(t);
                }
            }
            None => self.untimed += 1,
        }
    }

    /// Put the timestamps in presentation order; the input's timestamps restarted (or a
    /// stream's stepped back) `resets` times while it was read.
    pub fn finish(&mut self, resets: usize) {
        self.frame_pts.sort_unstable();
        self.keyframe_pts.sort_unstable();
        self.keyframe_pts.dedup();
        self.resets = resets;
    }

    /// Frames the video holds (one per packet).
    pub fn frames(&self) -> u64 {
        self.frame_pts.len() as u64 + self.untimed
    }

    /// Presentation timestamps of every frame, in order.
    pub fn frame_pts(&self) -> &[i64] {
        &self.frame_pts
    }

    /// Presentation timestamps of the keyframes, in order.
    pub fn keyframes(&self) -> &[i64] {
        &self.keyframe_pts
    }

    /// Time base of the timestamps.
    pub fn time_base(&self) -> Rational {
        self.time_base
    }

    /// The video's nominal frame rate.
    pub fn frame_rate(&self) -> Rational {
        self.frame_rate
    }

    /// Why the video cannot be cut at its keyframes (each part decoded on its own, found by
    /// its timestamps), or `None` when it can.
    pub fn why_not_cuttable(&self) -> Option<String> {
        if self.untimed > 0 {
            return Some(match self.untimed {
                1 => "a video packet carries no timestamp".to_string(),
                n => format!("{n} video packets carry no timestamp"),
            });
        }
        if self.resets > 0 {
            return Some("its timestamps restart or step back (a joined stream)".into());
        }
        if self.frame_pts.windows(2).any(|w| w[0] == w[1]) {
            return Some("two video frames share a timestamp".into());
        }
        if self.keyframe_pts.len() < 2 {
            return Some("it has fewer than two keyframes".into());
        }
        // A remux that copied decode times into presentation times: B-frames make the
        // presentation times go back in decode order, and these never do. The decoder hands
        // frames out in another order than their times say, so a part cut by time does not
        // get the frames it was planned with. (Matroska stores one time; FFmpeg guesses the
        // other, so only the presentation times count.)
        if self.reorders && self.timed > 1 && !self.pts_went_back {
            let equal = self.timed_twice > 1 && !self.pts_differs_from_dts;
            return Some(match equal {
                true => "its video reorders frames (B-frames) but every packet's presentation time equals its decode time".into(),
                false => "its video declares reordered frames (B-frames) but its timestamps never go back in decoding order: either it codes none (cutting would be safe, but RAVE cannot tell without decoding it) or they are decode times, not presentation times".into(),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(packets: &[(Option<i64>, bool)]) -> KeyframeIndex {
        let mut i = KeyframeIndex::new(Rational::new(1, 25), Rational::new(25, 1));
        for &(pts, key) in packets {
            i.add((pts, None), key, false);
        }
        i.finish(0);
        i
    }

    #[test]
    fn reordered_video_timed_in_decode_order_is_not_cut() {
        // Packets in decode order, with their presentation and (where stored) decode times.
        let index = |reorders: bool, pts: &[i64], dts: Option<&[i64]>| {
            let mut i = KeyframeIndex::new(Rational::new(1, 25), Rational::new(25, 1));
            i.set_reorders(reorders);
            for (n, &p) in pts.iter().enumerate() {
                i.add((Some(p), dts.map(|d| d[n])), p % 4 == 0, false);
            }
            i.finish(0);
            i.why_not_cuttable()
        };
        let b_frames = [0, 3, 1, 2, 4, 7, 5, 6];
        let in_order = [0, 1, 2, 3, 4, 5, 6, 7];
        let decode_times = [-1, 0, 1, 2, 3, 4, 5, 6];
        // Clean: B-frames with their decode times (MP4), or alone (Matroska); no reordering.
        assert_eq!(index(true, &b_frames, Some(&decode_times)), None);
        assert_eq!(index(true, &b_frames, None), None);
        assert_eq!(index(false, &in_order, Some(&in_order)), None);
        assert_eq!(index(false, &in_order, None), None);
        // Decode times copied into presentation times.
        let why = index(true, &in_order, Some(&in_order)).expect("pts copied from dts");
        assert!(
            why.contains("every packet's presentation time equals its decode time"),
            "{why}"
        );
        let why = index(true, &in_order, None).expect("Matroska: only decode times");
        assert!(why.contains("never go back in decoding order"), "{why}");
        // FFmpeg's guessed decode times beside them (Matroska) change nothing.
        let guessed = index(true, &in_order, Some(&decode_times)).expect("guessed dts");
        assert!(why == guessed, "{guessed}");
    }

    #[test]
    fn frames_and_keyframes_come_out_in_presentation_order() {
        // Decode order I0 P3 B1 B2 I4 P6 B5.
        let i = index(&[
            (Some(0), true),
            (Some(3), false),
            (Some(1), false),
            (Some(2), false),
            (Some(4), true),
            (Some(6), false),
            (Some(5), false),
        ]);
        assert_eq!(i.frame_pts(), &[0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(i.keyframes(), &[0, 4]);
        assert_eq!(i.frames(), 7);
        assert_eq!(i.why_not_cuttable(), None);
    }

    #[test]
    fn untimed_repeated_or_single_keyframe_videos_are_not_cut() {
        let untimed = index(&[(Some(0), true), (None, false), (Some(2), true)]);
        assert_eq!(
            untimed.why_not_cuttable().as_deref(),
            Some("a video packet carries no timestamp")
        );
        let repeated = index(&[(Some(0), true), (Some(1), false), (Some(1), true)]);
        assert!(repeated.why_not_cuttable().unwrap().contains("share"));
        let single = index(&[(Some(0), true), (Some(1), false)]);
        assert!(
            single
                .why_not_cuttable()
                .unwrap()
                .contains("fewer than two")
        );
        let mut restarted = index(&[(Some(0), true), (Some(1), true)]);
        restarted.finish(1);
        assert!(restarted.why_not_cuttable().unwrap().contains("restart"));
    }

    #[test]
    fn discarded_packets_are_not_frames() {
        let mut i = KeyframeIndex::new(Rational::new(1, 25), Rational::new(25, 1));
        i.add((Some(-2), None), true, true);
        i.add((Some(0), None), true, false);
        i.finish(0);
        assert_eq!(i.frame_pts(), &[0]);
        assert_eq!(i.keyframes(), &[0]);
    }
}
