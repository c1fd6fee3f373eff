//! `LastFrameLength`: the output's last frame lasts as long as the input's. Muxers give a
//! packet without a duration the nominal rate's frame, which cuts the last frame of a
//! video that slows down at its end; MP4, MOV and Matroska all end the video at its
//! latest presentation time plus that packet's duration (what players take for the end),
//! so the packet shown last (not the one decoded last, with B-frames) gets the length.

use std::path::PathBuf;

use ffmpeg_next::{Packet, Rational, Rescale};
use rave_core::error::Result;
use rave_ffmpeg::segment_file::SegmentFile;

/// The last segment's frame shown last, and how long it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastFrameLength {
    /// The latest presentation time of the last segment (its time base).
    last_pts: i64,
    /// How long the input's last frame lasts (the last segment's time base).
    ticks: i64,
}

impl LastFrameLength {
    /// For the job's last segment `(file, first pts)`, whose input's last frame lasts
    /// `ticks` of `source_tb`; `None` for a segment with no timed packet.
    pub fn of(
        last: &(PathBuf, Option<i64>),
        ticks: i64,
        source_tb: Rational,
    ) -> Result<Option<Self>> {
        let mut seg = SegmentFile::open(&last.0)?;
        if let Some(first) = last.1 {
            seg.restore_first_pts(first);
        }
        let tb = seg.time_base();
        let mut last_pts = None;
        while let Some(packet) = seg.next_packet()? {
            last_pts = last_pts.max(packet.pts());
        }
        Ok(last_pts.map(|last_pts| Self {
            last_pts,
            ticks: ticks.rescale(source_tb, tb).max(1),
        }))
    }

    /// Give `packet` of the last segment its duration where it is the frame shown last.
    pub fn apply(&self, packet: &mut Packet) {
        if packet.pts() == Some(self.last_pts) {
            packet.set_duration(self.ticks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_shown_last_gets_the_length_not_the_one_decoded_last() {
        // B-frames at the end: decoded last is a B-frame (pts 2800) shown before the P-frame
        // at 2900; the input's last frame lasts 100.
        let ends = LastFrameLength {
            last_pts: 2900,
            ticks: 100,
        };
        let mut p = Packet::empty();
        p.set_pts(Some(2900));
        ends.apply(&mut p);
        assert_eq!(p.duration(), 100);
        let mut b = Packet::empty();
        b.set_pts(Some(2800));
        ends.apply(&mut b);
        assert_eq!(b.duration(), 0, "left to the muxer");
    }
}
