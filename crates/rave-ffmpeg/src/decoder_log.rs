//! `DecoderLog`: the damage the video decoder of one reading logged. A reading that starts
//! at a keyframe inside an open GOP (a capture cut mid-GOP, whose leading packets were
//! skipped) makes the H.264 decoder log a stale reference ("mmco: unref short failure" for
//! a command of its first GOP that drops a picture from before the cut, "Frame num gap"
//! where a skipped leading picture was a reference): nothing shown is damaged by them, so
//! those of the first GOP of a reading that skipped leading packets are forgiven, and only
//! those. Anywhere else a frame number gap means a reference picture was lost and the
//! pictures using it concealed: damage.

use crate::log_watch::LogWatch;

/// The decoder's log of one reading, with the stale drops of its first GOP forgiven.
#[derive(Debug)]
pub struct DecoderLog {
    watch: LogWatch,
    keyframes_out: u32,
    /// Stale references forgiven: where the reading skipped leading packets, those logged
    /// before the second keyframe came out of the decoder (every picture coded before it
    /// was decoded by then). `None` while that window is open.
    forgiven: Option<u64>,
    /// A part joined whose leading packets were skipped: the stale drops logged before its
    /// window opened, and the keyframes out since (it closes at the second).
    part: Option<(u64, u32)>,
    /// Stale drops forgiven in the closed windows of parts joined.
    parts_forgiven: u64,
}

impl DecoderLog {
    /// Count what `watch` sees.
    pub fn new(watch: LogWatch) -> Self {
        Self {
            watch,
            keyframes_out: 0,
            forgiven: Some(0),
            part: None,
            parts_forgiven: 0,
        }
    }

    /// The reading skipped a leading packet (before the first keyframe, or a leading
    /// picture of its open GOP), or decoded one the container hides (an edit list's
    /// pre-roll): what the decoder says of references it does not hold is forgiven up to
    /// the second keyframe out.
    pub fn on_leading_skipped(&mut self) {
        if self.keyframes_out < 2 {
            self.forgiven = None;
        }
    }

    /// A part joined skipped a leading packet: what the decoder says of references it does
    /// not hold (the part's, before its first keyframe) is forgiven from here up to the
    /// part's second keyframe out.
    pub fn on_part_leading_skipped(&mut self) {
        if self.part.is_none() {
            self.part = Some((self.watch.tally().stale_drops(), 0));
        }
    }

    /// A frame came out of the decoder (`key`: a keyframe).
    pub fn on_frame_out(&mut self, key: bool) {
        if !key {
            return;
        }
        self.keyframes_out += 1;
        let stale = self.watch.tally().stale_drops();
        if self.keyframes_out >= 2 && self.forgiven.is_none() {
            self.forgiven = Some(stale);
        }
        if let Some((from, keyframes)) = &mut self.part {
            *keyframes += 1;
            if *keyframes >= 2 {
                self.parts_forgiven += stale.saturating_sub(*from);
                self.part = None;
            }
        }
    }

    fn unforgiven_stale_drops(&self) -> u64 {
        let stale = self.watch.tally().stale_drops();
        let in_part = self.part.map_or(0, |(from, _)| stale.saturating_sub(from));
        self.forgiven.map_or(0, |f| {
            stale.saturating_sub(f + self.parts_forgiven + in_part)
        })
    }

    /// Damage messages logged and not forgiven.
    pub fn errors(&self) -> u64 {
        self.watch.tally().count() + self.unforgiven_stale_drops()
    }

    /// The first of them, as FFmpeg worded it.
    pub fn first(&self) -> Option<String> {
        let tally = self.watch.tally();
        tally.first().or_else(|| {
            (self.unforgiven_stale_drops() > 0)
                .then(|| tally.first_stale_drop())
                .flatten()
        })
    }

    /// Forget what was logged so far (it was about references decoded before a
    /// segment's first frame).
    pub fn forget(&mut self) {
        self.watch.tally().reset();
        if let Some(f) = &mut self.forgiven {
            *f = 0;
        }
        self.parts_forgiven = 0;
        if let Some((from, _)) = &mut self.part {
            *from = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_watch::record;

    fn log() -> (DecoderLog, Box<[u8; 64]>) {
        let fake = Box::new([0u8; 64]);
        let watch = LogWatch::demuxer(fake.as_ptr() as *const _);
        (DecoderLog::new(watch), fake)
    }

    const STALE: Option<&str> = Some("mmco: unref short failure");

    #[test]
    fn stale_drops_before_the_second_keyframe_out_are_forgiven_and_only_those() {
        let (mut log, _fake) = log();
        log.on_leading_skipped();
        log.on_frame_out(true);
        record(log.watch.tally(), STALE);
        record(log.watch.tally(), STALE);
        log.on_frame_out(false);
        assert_eq!((log.errors(), log.first()), (0, None));
        log.on_frame_out(true);
        assert_eq!(log.errors(), 0);
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 1);
        assert_eq!(log.first().as_deref(), STALE);
        record(log.watch.tally(), Some("co located POCs unavailable"));
        assert_eq!(log.errors(), 2);
        assert_eq!(log.first().as_deref(), Some("co located POCs unavailable"));
        // A segment's first frame: what came before is forgotten, nothing after forgiven.
        log.forget();
        assert_eq!(log.errors(), 0);
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 1);
    }

    /// A part joined mid-GOP: the stale drops from its first skipped packet to its second
    /// keyframe out are forgiven, those before and after it count.
    #[test]
    fn a_parts_stale_drops_up_to_its_second_keyframe_are_forgiven() {
        let (mut log, _fake) = log();
        log.on_frame_out(true);
        log.on_frame_out(true);
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 1);
        log.on_part_leading_skipped();
        log.on_frame_out(true);
        record(log.watch.tally(), STALE);
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 1);
        log.on_frame_out(true);
        assert_eq!(log.errors(), 1);
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 2);
    }

    #[test]
    fn other_damage_of_the_first_gop_counts() {
        let (mut log, _fake) = log();
        log.on_leading_skipped();
        log.on_frame_out(true);
        record(log.watch.tally(), Some("co located POCs unavailable"));
        assert_eq!(log.errors(), 1);
    }

    /// A reading from a clean keyframe (nothing skipped): a frame number gap is a lost
    /// reference, even in a file with one keyframe.
    #[test]
    fn without_skipped_leading_packets_nothing_is_forgiven() {
        let (mut log, _fake) = log();
        log.on_frame_out(true);
        record(log.watch.tally(), Some("Frame num gap 3 1"));
        assert_eq!(log.errors(), 1);
        log.on_frame_out(true);
        log.on_leading_skipped();
        record(log.watch.tally(), STALE);
        assert_eq!(log.errors(), 2, "too late to open the window");
    }
}
