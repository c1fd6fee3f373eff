//! `LeadingPackets`: the video packets a reading meets before its first decodable picture.
//! A capture or a cut rarely starts on a keyframe: the packets before the first one are
//! predicted from pictures the file does not hold. Nor is the first keyframe always clean:
//! in an open GOP (H.264 open-gop, HEVC CRA, MPEG-2 without closed_gop) the pictures coded
//! right after it but shown before it refer back to the GOP before, which the cut removed.
//! Both are leading packets: no frames of the job, skipped and said, never counted as damage.
//! (Leading pictures predicted from the keyframe alone decode, and are kept:
//! `decodable_leading`.)

use crate::decodable_leading::LeadingCheck;

/// The first keyframe of a reading, once read.
#[derive(Debug, Clone, Copy)]
struct FirstKeyframe {
    /// Its presentation time (untimed: no leading pictures can be told after it).
    pts: Option<i64>,
    /// Whether the packets read since it were all shown before it: its open GOP's leading
    /// pictures, which end at the first packet shown after it.
    leading_pictures: bool,
    /// It is an H.264 recovery point: untimed packets right after it are its leading
    /// pictures too (a Matroska copy cut gives them no time, being shown before the cut).
    recovery_point: bool,
}

/// The video packets of one reading before its first decodable picture (see the module).
#[derive(Debug, Clone, Default)]
pub struct LeadingPackets {
    check: LeadingCheck,
    first_key: Option<FirstKeyframe>,
    /// Presentation times of the leading packets read.
    pts: Vec<i64>,
    read: u64,
    sent: u64,
    /// Whether the packet read last is a leading one.
    last_leading: bool,
}

impl LeadingPackets {
    /// The leading packets of a stream whose decodable leading pictures `check` tells.
    pub fn new(check: LeadingCheck) -> Self {
        Self {
            check,
            ..Self::default()
        }
    }

    /// A video packet was read (`key`: flagged a keyframe; `pts`: its presentation time;
    /// `data`: its bytes); whether it is a leading one.
    pub fn on_read(&mut self, key: bool, pts: Option<i64>, data: &[u8]) -> bool {
        let check = self.check;
        let leading = match &mut self.first_key {
            None if key => {
                // An untimed MPEG-2 keyframe's leading pictures are told by their type.
                let timed = pts.is_some() || check == LeadingCheck::Mpeg2;
                self.first_key = Some(FirstKeyframe {
                    pts,
                    leading_pictures: timed && !check.closed_gop(data),
                    recovery_point: check.recovery_point(data),
                });
                false
            }
            None => true,
            Some(first) => match (first.leading_pictures, pts, first.pts) {
                (true, Some(p), Some(key_pts)) if !key && p < key_pts => !check.decodable(data),
                (true, None, Some(_)) if !key && first.recovery_point => true,
                (true, _, None) if !key && check.mpeg2_b_picture(data) => true,
                _ => {
                    first.leading_pictures = false;
                    false
                }
            },
        };
        self.last_leading = leading;
        if leading {
            self.read += 1;
            self.pts.extend(pts);
        }
        leading
    }

    /// The packet read last went to the decoder (a `discarded` one, decoded only as a
    /// reference, is not counted).
    pub fn on_sent(&mut self, discarded: bool) {
        if self.last_leading && !discarded {
            self.sent += 1;
        }
    }

    /// Whether the packet read last is a leading one (skipped where the file is known to
    /// start with some).
    pub fn last_is_leading(&self) -> bool {
        self.last_leading
    }

    /// How this stream's decodable leading pictures are told.
    pub fn check(&self) -> LeadingCheck {
        self.check
    }

    /// Whether the first keyframe read is an H.264 recovery point (no IDR picture).
    pub fn starts_on_recovery_point(&self) -> bool {
        self.first_key.is_some_and(|k| k.recovery_point)
    }

    /// Whether a keyframe was read.
    pub fn keyframe_read(&self) -> bool {
        self.first_key.is_some()
    }

    /// Whether the leading packets are all read: a keyframe came, and a packet shown after
    /// it (its leading pictures, if any, came before).
    pub fn settled(&self) -> bool {
        self.first_key.is_some_and(|k| !k.leading_pictures)
    }

    /// Leading packets read, where a keyframe came (a stream without any keyframe flag has
    /// no packet "before the first").
    pub fn read(&self) -> u64 {
        match self.keyframe_read() {
            true => self.read,
            false => 0,
        }
    }

    /// Leading packets sent to the decoder, where a keyframe came: they are expected to
    /// yield no frame.
    pub fn sent(&self) -> u64 {
        match self.keyframe_read() {
            true => self.sent,
            false => 0,
        }
    }

    /// Presentation times of the packets that turned out to be no leading ones: all of
    /// them where no keyframe came.
    pub fn unkeyed_pts(&self) -> &[i64] {
        match self.keyframe_read() {
            true => &[],
            false => &self.pts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `(key, pts)` packets; which were leading.
    fn leading_of(packets: &[(bool, Option<i64>)]) -> (Vec<bool>, LeadingPackets) {
        let mut l = LeadingPackets::default();
        let flags = packets.iter().map(|&(k, p)| l.on_read(k, p, &[])).collect();
        (flags, l)
    }

    #[test]
    fn packets_before_the_first_keyframe_lead() {
        let (flags, l) = leading_of(&[
            (false, Some(7)),
            (false, Some(5)),
            (true, Some(10)),
            (false, Some(12)),
            (false, Some(11)),
        ]);
        assert_eq!(flags, [true, true, false, false, false]);
        assert_eq!((l.read(), l.unkeyed_pts()), (2, &[][..]));
    }

    #[test]
    fn an_open_gops_pictures_shown_before_its_keyframe_lead_until_one_shown_after_it() {
        // I(10) B(7) B(8) B(9) P(14) B(11): the B-frames before the P refer back.
        let (flags, l) = leading_of(&[
            (false, Some(3)),
            (true, Some(10)),
            (false, Some(7)),
            (false, Some(8)),
            (false, Some(9)),
            (false, Some(14)),
            (false, Some(11)),
            (false, Some(12)),
        ]);
        assert_eq!(flags, [true, false, true, true, true, false, false, false]);
        assert_eq!(l.read(), 4);
        assert!(l.settled());
        let (_, open) = leading_of(&[(true, Some(10)), (false, Some(7))]);
        assert!(open.keyframe_read() && !open.settled());
        // Timestamps that restart lower later on (a splice) are no leading pictures.
        let (flags, _) = leading_of(&[(true, Some(10)), (false, Some(11)), (false, Some(2))]);
        assert_eq!(flags, [false, false, false]);
    }

    #[test]
    fn a_second_keyframe_or_an_untimed_packet_ends_the_leading_pictures() {
        let (flags, _) = leading_of(&[(true, Some(10)), (true, Some(4)), (false, Some(3))]);
        assert_eq!(flags, [false, false, false]);
        let (flags, _) = leading_of(&[(true, Some(10)), (false, None), (false, Some(3))]);
        assert_eq!(flags, [false, false, false]);
        let (flags, _) = leading_of(&[(true, None), (false, Some(3))]);
        assert_eq!(flags, [false, false]);
    }

    #[test]
    fn untimed_packets_right_after_an_h264_recovery_point_lead() {
        // Length-prefixed H.264: a non-IDR I slice (a recovery point), an IDR slice.
        let (recovery, idr) = ([0, 0, 0, 2, 0x61, 0], [0, 0, 0, 2, 0x65, 0]);
        let mut l = LeadingPackets::new(LeadingCheck::H264);
        let read: Vec<bool> = [(true, Some(10), &recovery), (false, None, &recovery)]
            .iter()
            .chain(&[(false, None, &recovery), (false, Some(12), &recovery)])
            .map(|&(key, pts, data)| l.on_read(key, pts, data))
            .collect();
        assert_eq!(read, [false, true, true, false]);
        let mut l = LeadingPackets::new(LeadingCheck::H264);
        l.on_read(true, Some(10), &idr);
        assert!(!l.on_read(false, None, &idr));
    }

    #[test]
    fn without_any_keyframe_nothing_leads() {
        let (flags, mut l) = leading_of(&[(false, Some(1)), (false, None), (false, Some(2))]);
        assert_eq!(flags, [true, true, true]);
        l.on_sent(false);
        assert_eq!((l.read(), l.sent()), (0, 0));
        assert_eq!(l.unkeyed_pts(), [1, 2]);
    }

    #[test]
    fn only_leading_packets_sent_undiscarded_count_as_sent() {
        let mut l = LeadingPackets::default();
        l.on_read(false, Some(1), &[]);
        l.on_sent(false);
        l.on_read(false, Some(2), &[]);
        l.on_sent(true);
        l.on_read(true, Some(5), &[]);
        l.on_sent(false);
        assert_eq!(l.sent(), 1);
    }
}
