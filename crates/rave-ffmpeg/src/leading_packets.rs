//! `LeadingPackets`: the video packets a reading meets before its first decodable picture.
//! A capture or a cut rarely starts on a keyframe: the packets before the first one are
//! predicted from pictures the file does not hold. Nor is the first keyframe always clean:
//! in an open GOP (H.264 open-gop, HEVC CRA, MPEG-2 without closed_gop) the pictures coded
//! right after it but shown before it refer back to the GOP before, which the cut removed.
//! Both are leading packets: no frames of the job, skipped and said, never counted as damage.
//! (Leading pictures predicted from the keyframe alone decode, and are kept:
//! `decodable_leading`.) A part joined to a transport stream (`cat capture1.ts
//! capture2.ts`, each captured from any byte) starts mid-GOP the same way: its packets
//! before its first decodable picture are told apart likewise, from the part's first video
//! packet on (`LeadingPackets::on_part`). Fed to the decoder, they were decoded from the
//! part before's pictures: errors, exit 3, and with --allow-corrupt concealed garbage.

use crate::decodable_leading::LeadingCheck;

/// Video packets of a new part read, at most, before the part before's last ones come
/// (FFmpeg hands out a PES when the next one of its PID starts).
const JOIN_READS: u64 = 2;

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
    /// The part joined last, while its leading packets are read (`on_part`).
    part: Option<Box<LeadingPackets>>,
    /// Whether the packet read last is a leading one of a part joined.
    last_of_part: bool,
    /// The leading packets of the parts joined, read and sent, once each part settled.
    parts_read: u64,
    parts_sent: u64,
    /// Presentation times of the packets of parts joined without any keyframe.
    parts_unkeyed: Vec<i64>,
    /// Packets of parts joined without any keyframe (skipped: undecodable).
    parts_unkeyed_read: u64,
    /// What the part before the latest join was, once one started: the reading's own
    /// packets (else a part joined), and whether it held a keyframe.
    part_before: Option<(bool, bool)>,
    /// Packets read (by this reading or part).
    seen: u64,
    /// How long after its decode time a keyframe may be shown and its time be right, in
    /// its time base (a longer wait is a damaged presentation time: the pictures after
    /// it are no leading ones for being shown before it).
    reorder_max: Option<i64>,
}

impl LeadingPackets {
    /// The leading packets of a stream whose decodable leading pictures `check` tells.
    pub fn new(check: LeadingCheck) -> Self {
        Self {
            check,
            ..Self::default()
        }
    }

    /// The same, a keyframe shown more than `ticks` after it is decoded taken as untimed
    /// (its presentation time damaged).
    pub fn with_reorder_max(self, ticks: i64) -> Self {
        Self {
            reorder_max: Some(ticks),
            ..self
        }
    }

    /// The leading packets of a new reading of the same stream.
    pub fn fresh(&self) -> Self {
        Self {
            check: self.check,
            reorder_max: self.reorder_max,
            ..Self::default()
        }
    }

    /// A video packet of the part before a join was read, handed out after the new part's
    /// first video packet (FFmpeg hands out a PES when the next starts), presented at
    /// `pts`: a leading one only where that part held no keyframe (counted with its own);
    /// whether it is.
    pub fn on_read_of_part_before(&mut self, pts: Option<i64>) -> bool {
        // The join may show by another stream first: no part started for it yet, the
        // packet's part is the one read now (a part that has read more than a join's
        // first packets, or the reading).
        let before = match &self.part {
            Some(part) if part.seen <= JOIN_READS => self.part_before,
            Some(part) => Some((false, part.keyframe_read())),
            None => Some((true, self.keyframe_read())),
        };
        let leading = match before {
            Some((true, false)) => {
                self.read += 1;
                self.pts.extend(pts);
                true
            }
            Some((false, false)) => {
                self.parts_unkeyed_read += 1;
                true
            }
            _ => false,
        };
        (self.last_leading, self.last_of_part) = (leading, false);
        leading
    }

    /// A video packet was read (`key`: flagged a keyframe; `pts`, `dts`: its presentation
    /// and decode times; `data`: its bytes); whether it is a leading one.
    pub fn on_read(&mut self, key: bool, pts: Option<i64>, dts: Option<i64>, data: &[u8]) -> bool {
        if let Some(part) = &mut self.part {
            let leading = part.on_read(key, pts, dts, data);
            if part.settled() {
                self.settle_part();
            }
            (self.last_leading, self.last_of_part) = (leading, leading);
            return leading;
        }
        self.last_of_part = false;
        self.seen += 1;
        let check = self.check;
        let leading = match &mut self.first_key {
            None if key => {
                // A keyframe shown long after it is decoded has its time damaged: untimed.
                let in_step = match (pts, dts, self.reorder_max) {
                    (Some(p), Some(d), Some(max)) => p >= d && p - d <= max,
                    _ => true,
                };
                let pts = pts.filter(|_| in_step);
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
        match &mut self.part {
            Some(part) if self.last_of_part => part.on_sent(discarded),
            _ if self.last_leading && !self.last_of_part && !discarded => self.sent += 1,
            _ => {}
        }
    }

    /// A part joined starts: its video's first packet is the next read. Its packets before
    /// its first decodable picture lead, as a reading's do.
    pub fn on_part(&mut self) {
        self.part_before = Some(match &self.part {
            Some(part) => (false, part.keyframe_read()),
            None => (true, self.keyframe_read()),
        });
        self.settle_part();
        self.part = Some(Box::new(self.fresh()));
    }

    /// Count the leading packets of the part being read, and read on outside it. Where the
    /// reading had no keyframe before the part (the part before held none), the part's is
    /// its first: the packets after it lead no more.
    fn settle_part(&mut self) {
        if let Some(part) = self.part.take() {
            if self.first_key.is_none()
                && let Some(key) = part.first_key
            {
                self.first_key = Some(FirstKeyframe {
                    leading_pictures: false,
                    ..key
                });
            }
            self.parts_read += part.read();
            self.parts_sent += part.sent();
            self.parts_unkeyed.extend(part.unkeyed_pts());
            if !part.keyframe_read() {
                self.parts_unkeyed_read += part.read;
            }
        }
    }

    /// Whether the packet read last is a leading one of a part joined (skipped always:
    /// the decoder holds the part before's pictures, not the ones it refers to).
    pub fn last_is_leading_of_part(&self) -> bool {
        self.last_of_part
    }

    /// Leading packets of the parts joined (where a part had a keyframe).
    pub fn parts_read(&self) -> u64 {
        self.parts_read + self.part.as_ref().map_or(0, |p| p.read())
    }

    /// Packets of the parts joined that hold no keyframe, and the presentation time the
    /// first of them starts at: all skipped (every one refers to pictures before its part,
    /// which the file does not hold), so frames the output lacks. (Every packet of such a
    /// part leads, so the times its leading packets were read at are all of its own.)
    pub fn unkeyed_parts(&self) -> (u64, Option<i64>) {
        let current = (self.part.as_ref())
            .filter(|p| !p.keyframe_read())
            .map_or((0, None), |p| (p.read, p.pts.first().copied()));
        (
            self.parts_unkeyed_read + current.0,
            self.parts_unkeyed.first().copied().or(current.1),
        )
    }

    /// Leading packets of the parts joined sent to the decoder.
    pub fn parts_sent(&self) -> u64 {
        self.parts_sent + self.part.as_ref().map_or(0, |p| p.sent())
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
    /// them where no keyframe came (in the reading, or in a part joined).
    pub fn unkeyed_pts(&self) -> Vec<i64> {
        let own = match self.keyframe_read() {
            true => &[][..],
            false => &self.pts[..],
        };
        let part = self
            .part
            .as_ref()
            .map(|p| p.unkeyed_pts())
            .unwrap_or_default();
        [own, &self.parts_unkeyed, &part].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `(key, pts)` packets; which were leading.
    fn leading_of(packets: &[(bool, Option<i64>)]) -> (Vec<bool>, LeadingPackets) {
        let mut l = LeadingPackets::default();
        let flags = packets
            .iter()
            .map(|&(k, p)| l.on_read(k, p, None, &[]))
            .collect();
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
        assert_eq!((l.read(), l.unkeyed_pts()), (2, vec![]));
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

    /// A part joined: its packets before its first keyframe lead (counted apart from the
    /// reading's), and those of its open GOP shown before that keyframe; then none do.
    #[test]
    fn a_part_joined_leads_until_its_own_keyframe() {
        let mut l = LeadingPackets::default();
        let read = |l: &mut LeadingPackets, packets: &[(bool, Option<i64>)]| {
            let flags: Vec<bool> = packets
                .iter()
                .map(|&(k, p)| l.on_read(k, p, None, &[]))
                .collect();
            let parts: Vec<bool> = packets
                .iter()
                .map(|_| l.last_is_leading_of_part())
                .collect();
            (flags, parts)
        };
        let (flags, _) = read(
            &mut l,
            &[(false, Some(3)), (true, Some(5)), (false, Some(6))],
        );
        assert_eq!(flags, [true, false, false]);
        l.on_part();
        assert_eq!(read(&mut l, &[(false, Some(90))]).0, [true]);
        assert!(l.last_is_leading_of_part());
        // Its keyframe at 100, an open GOP's picture shown before it, then one after it.
        let (flags, _) = read(
            &mut l,
            &[(true, Some(100)), (false, Some(97)), (false, Some(102))],
        );
        assert_eq!(flags, [false, true, false]);
        assert!(!l.last_is_leading_of_part());
        assert_eq!((l.read(), l.parts_read()), (1, 2));
        assert_eq!(read(&mut l, &[(false, Some(101))]).0, [false]);
        // A part without any keyframe: its packets are the timeline's, none lead.
        l.on_part();
        read(&mut l, &[(false, Some(200)), (false, Some(201))]);
        assert_eq!((l.parts_read(), l.unkeyed_pts()), (2, vec![200, 201]));
        assert_eq!(l.unkeyed_parts(), (2, Some(200)));
        l.on_part();
        read(&mut l, &[(false, Some(300)), (true, Some(302))]);
        assert_eq!(l.unkeyed_parts(), (2, Some(200)));
        l.on_part();
        read(&mut l, &[(false, Some(400))]);
        assert_eq!(l.unkeyed_parts(), (3, Some(200)));
    }

    /// A file whose first part holds no keyframe: the joined part's first keyframe is the
    /// reading's, and the packets after it lead no more (they were skipped to the end).
    #[test]
    fn a_parts_keyframe_is_the_readings_first_where_the_part_before_held_none() {
        let mut l = LeadingPackets::default();
        assert!(l.on_read(false, Some(3), None, &[]));
        assert!(l.on_read(false, Some(4), None, &[]));
        l.on_part();
        assert!(l.on_read(false, Some(90), None, &[]));
        assert!(!l.on_read(true, Some(100), None, &[]));
        assert!(!l.on_read(false, Some(101), None, &[]));
        assert!(!l.on_read(false, Some(102), None, &[]));
        assert!(l.keyframe_read());
        assert_eq!((l.read(), l.parts_read()), (2, 1));
        assert_eq!(l.unkeyed_parts(), (0, None));
        // That part's last packet handed out after the next one's first: no leading one.
        l.on_part();
        assert!(!l.on_read_of_part_before(Some(103)));
        // The first part's last packet handed out late, that part holding no keyframe:
        // leading, like the part's others.
        let mut l = LeadingPackets::default();
        l.on_read(false, Some(3), None, &[]);
        l.on_part();
        l.on_read(false, Some(90), None, &[]);
        assert!(l.on_read_of_part_before(Some(4)));
        assert!(l.last_is_leading() && !l.last_is_leading_of_part());
        l.on_sent(false);
        l.on_read(true, Some(100), None, &[]);
        l.on_read(false, Some(101), None, &[]);
        assert_eq!(
            (l.read(), l.sent()),
            (2, 1),
            "sent to the decoder, yielding nothing"
        );
    }

    /// A keyframe shown long after it is decoded (its presentation time damaged: a joined
    /// part's first, 5965 s late) has no leading pictures: the frames after it, shown
    /// before it, were skipped up to the next keyframe.
    #[test]
    fn a_keyframe_shown_long_after_it_is_decoded_leads_nothing() {
        let mut l = LeadingPackets::default().with_reorder_max(90_000);
        assert!(!l.on_read(true, Some(10_000_000), Some(1_000), &[]));
        assert!(!l.on_read(false, Some(4_000), Some(4_600), &[]));
        let mut l = LeadingPackets::default().with_reorder_max(90_000);
        l.on_part();
        assert!(!l.on_read(true, Some(10_000), Some(1_000), &[]));
        assert!(l.on_read(false, Some(4_000), Some(4_600), &[]));
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
            .map(|&(key, pts, data)| l.on_read(key, pts, None, data))
            .collect();
        assert_eq!(read, [false, true, true, false]);
        let mut l = LeadingPackets::new(LeadingCheck::H264);
        l.on_read(true, Some(10), None, &idr);
        assert!(!l.on_read(false, None, None, &idr));
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
        l.on_read(false, Some(1), None, &[]);
        l.on_sent(false);
        l.on_read(false, Some(2), None, &[]);
        l.on_sent(true);
        l.on_read(true, Some(5), None, &[]);
        l.on_sent(false);
        assert_eq!(l.sent(), 1);
    }
}
