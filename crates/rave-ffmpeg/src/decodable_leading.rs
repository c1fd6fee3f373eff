//! Leading pictures that do not refer back: some pictures coded after a keyframe but shown
//! before it are predicted only from it (HEVC RADL pictures; the B-frames of an MPEG-2 GOP
//! whose header says `closed_gop`). Unlike the leading pictures of an open GOP they decode
//! in a file cut there, so they are kept. Read from the packets' bytes.

use ffmpeg_next::codec::Id;

/// How a video stream's leading pictures are told decodable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LeadingCheck {
    /// HEVC: a packet whose pictures are RADL (NAL unit types 6 and 7).
    Hevc,
    /// MPEG-2: every leading picture of a keyframe whose GOP header says `closed_gop`.
    Mpeg2,
    /// H.264: none is; a keyframe may be a recovery point rather than an IDR picture.
    H264,
    /// Any other codec: none is.
    #[default]
    None,
}

impl LeadingCheck {
    /// The check for a stream of codec `id`.
    pub fn for_codec(id: Id) -> Self {
        match id {
            Id::HEVC => Self::Hevc,
            Id::MPEG2VIDEO => Self::Mpeg2,
            Id::H264 => Self::H264,
            _ => Self::None,
        }
    }

    /// Whether the keyframe packet `data` opens a GOP whose leading pictures all decode.
    pub fn closed_gop(self, data: &[u8]) -> bool {
        self == Self::Mpeg2 && mpeg2_gop_is_closed(data)
    }

    /// Whether the keyframe packet `data` is an H.264 recovery point (its first slice is no
    /// IDR slice, NAL unit type 1): decoding that starts there meets references to
    /// pictures before it (an open GOP, a stream cut by copying from such a keyframe).
    pub fn recovery_point(self, data: &[u8]) -> bool {
        self == Self::H264 && first_h264_slice_type(data) == Some(1)
    }

    /// Whether the keyframe packet `data` is an H.264 IDR picture (its first slice NAL unit
    /// type 5): no picture decoded after it is shown before it.
    pub fn idr(self, data: &[u8]) -> bool {
        self == Self::H264 && first_h264_slice_type(data) == Some(5)
    }

    /// Whether MPEG-2 packet `data`'s first picture is a B-picture (picture_coding_type 3):
    /// right after an open GOP's keyframe in decoding order, a leading picture, which
    /// refers back to the GOP before (told so where the keyframe has no timestamp to hold
    /// the pictures' against: a program stream times only the PES a picture starts in).
    pub fn mpeg2_b_picture(self, data: &[u8]) -> bool {
        self == Self::Mpeg2
            && data
                .windows(6)
                .find(|w| w[..4] == [0, 0, 1, 0])
                // 10 bits of temporal_reference, then 3 of picture_coding_type.
                .is_some_and(|w| (w[5] >> 3) & 7 == 3)
    }

    /// Whether the leading packet `data` holds a picture that decodes from the keyframe.
    pub fn decodable(self, data: &[u8]) -> bool {
        self == Self::Hevc && first_hevc_picture_type(data).is_some_and(|t| t == 6 || t == 7)
    }
}

/// The NAL unit type of the first slice of H.264 packet `data` (1 to 5).
fn first_h264_slice_type(data: &[u8]) -> Option<u8> {
    (nal_units(data).iter())
        .filter_map(|u| u.first().map(|b| b & 0x1f))
        .find(|t| (1..=5).contains(t))
}

/// The payloads of the NAL units of `data`, in Annex B form (start codes, as in MPEG-TS) or
/// length-prefixed with 4 bytes (as in MP4 and Matroska).
fn nal_units(data: &[u8]) -> Vec<&[u8]> {
    let annex_b = data.starts_with(&[0, 0, 1]) || data.starts_with(&[0, 0, 0, 1]);
    if annex_b {
        let mut starts = Vec::new();
        let mut i = 0;
        while i + 3 <= data.len() {
            if data[i..i + 3] == [0, 0, 1] {
                starts.push(i + 3);
                i += 3;
            } else {
                i += 1;
            }
        }
        return starts
            .iter()
            .enumerate()
            .map(|(k, &s)| &data[s..starts.get(k + 1).map_or(data.len(), |&n| n - 3)])
            .collect();
    }
    let mut units = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let len = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let Some(unit) = data.get(at + 4..at + 4 + len) else {
            break;
        };
        units.push(unit);
        at += 4 + len;
    }
    units
}

/// The NAL unit type of the first picture (VCL unit, types 0-31) in HEVC packet `data`.
fn first_hevc_picture_type(data: &[u8]) -> Option<u8> {
    nal_units(data)
        .iter()
        .filter_map(|u| u.first().map(|b| (b >> 1) & 0x3f))
        .find(|&t| t < 32)
}

/// Whether MPEG-2 packet `data` holds a GOP header (start code 0xB8) with `closed_gop` set.
fn mpeg2_gop_is_closed(data: &[u8]) -> bool {
    data.windows(8)
        .find(|w| w[..4] == [0, 0, 1, 0xB8])
        // 25 bits of time code, then closed_gop.
        .is_some_and(|w| w[7] & 0x40 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpeg2_b_pictures_are_told_by_their_coding_type() {
        // A sequence header's start, then a picture header: temporal_reference 2, type 3
        // (B), and one of type 2 (P).
        let b = [0, 0, 1, 0xB3, 0x06, 0, 0, 1, 0, 0x00, 0x98, 0xFF];
        let p = [0, 0, 1, 0, 0x00, 0x90, 0xFF];
        assert!(LeadingCheck::Mpeg2.mpeg2_b_picture(&b));
        assert!(!LeadingCheck::Mpeg2.mpeg2_b_picture(&p));
        assert!(!LeadingCheck::H264.mpeg2_b_picture(&b), "MPEG-2 only");
    }

    #[test]
    fn hevc_radl_pictures_are_told_in_both_packet_forms() {
        // An access unit delimiter (35), then a RADL_R slice (7).
        let annex_b = [0, 0, 0, 1, 35 << 1, 1, 0x50, 0, 0, 1, 7 << 1, 1, 0xaf];
        assert_eq!(first_hevc_picture_type(&annex_b), Some(7));
        assert!(LeadingCheck::Hevc.decodable(&annex_b));
        let rasl = [0, 0, 1, 9 << 1, 1, 0xaf];
        assert!(!LeadingCheck::Hevc.decodable(&rasl));
        let prefixed = [0, 0, 0, 3, 39 << 1, 1, 5, 0, 0, 0, 2, 6 << 1, 1];
        assert_eq!(first_hevc_picture_type(&prefixed), Some(6));
        assert!(!LeadingCheck::None.decodable(&prefixed));
    }

    #[test]
    fn an_h264_keyframe_without_an_idr_slice_is_a_recovery_point() {
        // Length-prefixed: an SEI (6), then a non-IDR slice (1) or an IDR slice (5).
        let packet = |slice: u8| [&[0, 0, 0, 2, 6, 0][..], &[0, 0, 0, 2, 0x60 | slice, 0]].concat();
        assert!(LeadingCheck::H264.recovery_point(&packet(1)));
        assert!(!LeadingCheck::H264.recovery_point(&packet(5)));
        assert!(LeadingCheck::H264.recovery_point(&[0, 0, 1, 0x61, 0x88]));
        assert!(!LeadingCheck::Hevc.recovery_point(&packet(1)));
    }

    #[test]
    fn an_mpeg2_gop_header_says_whether_it_is_closed() {
        let gop = |flags: u8| [0, 0, 1, 0xB3, 9, 9, 0, 0, 1, 0xB8, 0, 8, 0, flags, 0, 0];
        assert!(LeadingCheck::Mpeg2.closed_gop(&gop(0x40)));
        assert!(!LeadingCheck::Mpeg2.closed_gop(&gop(0x00)));
        assert!(!LeadingCheck::Hevc.closed_gop(&gop(0x40)));
    }
}
