//! `ShortEncodeDts`: decode timestamps for the first packets of an x265 encode of fewer
//! frames than its B-frame delay. x265 3.5 dates those packets from a delay it measures when
//! the frame after the delay arrives (frame 2: every preset has B-frames and a B-pyramid),
//! and never initialises it otherwise: an encode of 1 or 2 frames (a short clip, a segment
//! of one or two frames, a job's last segment) gets decode timestamps from whatever memory
//! held, and the MP4 muxer refuses them (`pts/dts pair unsupported`, or `pts < dts`),
//! intermittently. Such packets get the timestamps x265 would have given them: the k-th
//! smallest presentation timestamp sent, less the delay in frames.

use ffmpeg_next::{Packet, Rational, Rescale};

/// x265's B-frame delay in frames with B-frames and a B-pyramid, as every preset has.
pub const X265_BFRAME_DELAY: usize = 2;

/// Tracks what an encoder was sent, to date its first packets where it cannot.
#[derive(Debug, Clone)]
pub struct ShortEncodeDts {
    delay: usize,
    /// Presentation timestamps of the first `delay + 1` frames sent.
    first_pts: Vec<i64>,
    /// Packets dated so far.
    packets: usize,
    /// One frame's duration in the time base, when fewer than two frames were sent.
    nominal_step: i64,
}

impl ShortEncodeDts {
    /// For an encoder with a B-frame `delay` (in frames) whose frames are timed in
    /// `time_base` at a nominal `frame_rate`.
    pub fn new(delay: usize, time_base: Rational, frame_rate: Rational) -> Self {
        let nominal_step = match frame_rate.numerator() > 0 {
            true => 1i64.rescale(frame_rate.invert(), time_base).max(1),
            false => 1,
        };
        Self {
            delay,
            first_pts: Vec::with_capacity(delay + 1),
            packets: 0,
            nominal_step,
        }
    }

    /// A frame with presentation timestamp `pts` was sent.
    pub fn sent(&mut self, pts: i64) {
        if self.first_pts.len() <= self.delay {
            self.first_pts.push(pts);
        }
    }

    /// Date `packet`, the next one received, if the encoder could not: one of the first
    /// `delay` packets while no more than `delay` frames were sent.
    pub fn fix(&mut self, packet: &mut Packet) {
        let k = self.packets;
        self.packets += 1;
        if k >= self.delay || self.first_pts.len() > self.delay {
            return;
        }
        let mut sent = self.first_pts.clone();
        sent.sort_unstable();
        let step = match sent.as_slice() {
            [a, b, ..] if b > a => b - a,
            _ => self.nominal_step,
        };
        if let Some(&pts) = sent.get(k) {
            packet.set_dts(Some(pts - self.delay as i64 * step));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dated(d: &mut ShortEncodeDts, pts: i64, garbage: i64) -> Option<i64> {
        let mut p = Packet::empty();
        p.set_pts(Some(pts));
        p.set_dts(Some(garbage));
        d.fix(&mut p);
        p.dts()
    }

    #[test]
    fn one_or_two_frames_get_the_timestamps_x265_would_give() {
        let tb = Rational::new(1, 1000);
        let mut one = ShortEncodeDts::new(2, tb, Rational::new(25, 1));
        one.sent(400);
        assert_eq!(dated(&mut one, 400, i64::MIN / 2), Some(320));

        let mut two = ShortEncodeDts::new(2, tb, Rational::new(25, 1));
        two.sent(0);
        two.sent(100);
        // Packets come in decode order: 0 then 100; dts two frames (of 100) before.
        assert_eq!(dated(&mut two, 0, 123_456_789), Some(-200));
        assert_eq!(dated(&mut two, 100, -987_654_321), Some(-100));
    }

    #[test]
    fn an_encode_past_the_delay_is_left_alone() {
        let tb = Rational::new(1, 1000);
        let mut d = ShortEncodeDts::new(2, tb, Rational::new(25, 1));
        for pts in [0, 40, 80] {
            d.sent(pts);
        }
        assert_eq!(dated(&mut d, 0, -80), Some(-80));
        assert_eq!(dated(&mut d, 80, -40), Some(-40));
        // No delay (x264 here): nothing is touched.
        let mut none = ShortEncodeDts::new(0, tb, Rational::new(25, 1));
        none.sent(0);
        assert_eq!(dated(&mut none, 0, 7), Some(7));
    }
}
