//! `ReorderEvidence`: whether a stream that declares reordered frames really codes any.
//! MPEG-1 and MPEG-2 video declare reordering unless their sequence says `low_delay`, which
//! almost no encoder sets, so an I/P-only stream (a broadcast or an archive encode without
//! B-frames) looks as if it reorders. Its pictures' coding types are in the packets' bytes:
//! without a B-picture, decode order is presentation order.

use ffmpeg_next::codec::Id;

/// What the packets of one video stream showed about its picture coding types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderEvidence {
    /// The codec's packets are not read for it: its declaration stands.
    Unread,
    /// MPEG-1/2 video, no B-picture seen yet.
    NoBPictures,
    /// MPEG-1/2 video with a B-picture.
    BPictures,
}

impl ReorderEvidence {
    /// The evidence to gather for a stream of codec `id`.
    pub fn for_codec(id: Id) -> Self {
        match id {
            Id::MPEG2VIDEO | Id::MPEG1VIDEO => Self::NoBPictures,
            _ => Self::Unread,
        }
    }

    /// Read the video packet `data`.
    pub fn add(&mut self, data: &[u8]) {
        if *self == Self::NoBPictures && holds_mpeg_b_picture(data) {
            *self = Self::BPictures;
        }
    }

    /// Whether the stream reorders frames, given what it `declared`.
    pub fn reorders(self, declared: bool) -> bool {
        declared && self != Self::NoBPictures
    }
}

/// Whether MPEG-1/2 packet `data` holds a picture header (start code 0x00) whose
/// `picture_coding_type` (3 bits after the 10-bit temporal reference) is B (3).
fn holds_mpeg_b_picture(data: &[u8]) -> bool {
    // Searched for, not walked byte by byte: every video packet of the file passes here.
    memchr::memmem::find_iter(data, &[0, 0, 1, 0])
        .any(|at| data.get(at + 5).is_some_and(|b| (b >> 3) & 0x7 == 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A picture header with temporal reference 5 and coding type `kind`.
    fn picture(kind: u8) -> Vec<u8> {
        let sequence = [0, 0, 1, 0xB3, 1, 2];
        let header = [0, 0, 1, 0, 5 >> 2, ((5 & 3) << 6) | (kind << 3), 0xff];
        [&sequence[..], &header[..]].concat()
    }

    #[test]
    fn mpeg2_b_pictures_are_told_from_i_and_p_pictures() {
        let mut seen = ReorderEvidence::for_codec(Id::MPEG2VIDEO);
        seen.add(&picture(1));
        seen.add(&picture(2));
        assert_eq!(seen, ReorderEvidence::NoBPictures);
        assert!(!seen.reorders(true), "I/P only: no reordering");
        seen.add(&picture(3));
        assert_eq!(seen, ReorderEvidence::BPictures);
        assert!(seen.reorders(true));
        assert!(!seen.reorders(false));
        let mut other = ReorderEvidence::for_codec(Id::H264);
        other.add(&picture(1));
        assert!(other.reorders(true), "other codecs keep their declaration");
    }
}
