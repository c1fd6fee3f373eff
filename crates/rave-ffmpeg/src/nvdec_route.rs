//! Whether a stream goes to NVDEC or to a software decoder, decided before the decoder opens
//! from what the GPU's NVDEC said it decodes (`hw_caps::nvdec_caps`).
//!
//! Left to itself, FFmpeg falls back to software inside a decoder opened for NVDEC, but that
//! decoder was opened without threads of its own (a hardware decoder's), and FFmpeg's default
//! AV1 decoder (libdav1d) never uses NVDEC at all. Deciding first lets a stream NVDEC cannot
//! take be decoded in software on its share of the cores, and an AV1 stream NVDEC can take
//! go to FFmpeg's native AV1 decoder, the one with NVDEC acceleration.

use crate::hw_caps::NvdecCap;

/// What the decoder must know of a video stream to choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamShape {
    /// FFmpeg's codec name ("h264", "hevc", "av1", "mpeg2video", ...).
    pub codec: String,
    /// Bits per sample.
    pub bit_depth: u8,
    /// Whether the samples are YUV 4:2:0 (None: FFmpeg does not know the format yet).
    pub yuv420: Option<bool>,
    /// FFmpeg's name of the pixel format, for messages.
    pub pixel_format: String,
    /// Coded width and height.
    pub size: (u32, u32),
}

/// Where a stream is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeRoute {
    /// On NVDEC, by FFmpeg's decoder of this name (None: FFmpeg's default for the codec).
    Nvdec(Option<&'static str>),
    /// In software, and why not on NVDEC.
    Software(String),
}

/// Codecs FFmpeg accelerates with NVDEC that RAVE does not ask NVDEC about: FFmpeg decides
/// for these itself, as before.
const LEFT_TO_FFMPEG: [&str; 5] = ["mpeg1video", "mpeg4", "vc1", "wmv3", "mjpeg"];

/// The name `hw_caps` asks NVDEC about for FFmpeg's codec name.
fn caps_name(codec: &str) -> &str {
    match codec {
        "mpeg2video" => "mpeg2",
        other => other,
    }
}

/// A codec's name as people read it.
fn shown(codec: &str) -> String {
    match codec {
        "h264" => "H.264".into(),
        "hevc" => "HEVC".into(),
        "av1" => "AV1".into(),
        "vp9" => "VP9".into(),
        "vp8" => "VP8".into(),
        "mpeg2video" => "MPEG-2".into(),
        other => other.to_string(),
    }
}

/// Where `stream` is decoded given NVDEC's answers `caps` (or why they could not be had).
pub fn route(stream: &StreamShape, caps: &Result<Vec<NvdecCap>, String>) -> DecodeRoute {
    let codec = shown(&stream.codec);
    let caps = match caps {
        Ok(caps) => caps,
        Err(why) => return DecodeRoute::Software(format!("NVDEC is not available ({why})")),
    };
    let name = caps_name(&stream.codec);
    let asked = caps.iter().any(|c| c.codec == name);
    let hwaccel = LEFT_TO_FFMPEG.contains(&stream.codec.as_str());
    if !asked && !hwaccel {
        return DecodeRoute::Software(format!("NVDEC does not decode {codec}"));
    }
    if stream.yuv420 == Some(false) {
        return DecodeRoute::Software(format!(
            "the video is {} and NVDEC's frames are 4:2:0",
            stream.pixel_format
        ));
    }
    let av1 = stream.codec == "av1";
    let (w, h) = stream.size;
    // What FFmpeg has not read yet is left to it, as before; not for AV1, whose decoder with
    // NVDEC (FFmpeg's native one) has no software fallback: it goes there only when sure.
    let known = stream.yuv420.is_some() && w > 0 && h > 0;
    let depth_asked = caps
        .iter()
        .any(|c| c.codec == name && c.bit_depth == stream.bit_depth);
    if !asked || (!av1 && (!known || !depth_asked)) {
        return DecodeRoute::Nvdec(None);
    }
    if av1 && !known {
        return DecodeRoute::Software(
            "FFmpeg does not know the AV1 stream's format before decoding, and its AV1 decoder for NVDEC has no software fallback".into(),
        );
    }
    let Some(cap) = caps
        .iter()
        .find(|c| c.codec == name && c.bit_depth == stream.bit_depth && c.supported)
    else {
        return DecodeRoute::Software(format!(
            "NVDEC on this GPU does not decode {}-bit {codec}",
            stream.bit_depth
        ));
    };
    let macroblocks = w.div_ceil(16) * h.div_ceil(16);
    if w > cap.max_width || h > cap.max_height {
        return DecodeRoute::Software(format!(
            "{w}x{h} is larger than NVDEC decodes {codec} on this GPU ({}x{})",
            cap.max_width, cap.max_height
        ));
    }
    if cap.max_macroblocks > 0 && macroblocks > cap.max_macroblocks {
        return DecodeRoute::Software(format!(
            "{w}x{h} is {macroblocks} macroblocks, more than NVDEC decodes of {codec} on this GPU ({})",
            cap.max_macroblocks
        ));
    }
    if w < cap.min_width || h < cap.min_height {
        return DecodeRoute::Software(format!(
            "{w}x{h} is smaller than NVDEC decodes {codec} on this GPU ({}x{})",
            cap.min_width, cap.min_height
        ));
    }
    DecodeRoute::Nvdec(match av1 {
        // FFmpeg's default AV1 decoder is libdav1d, which has no hardware path.
        true => Some("av1"),
        false => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(codec: &'static str, bit_depth: u8, supported: bool) -> NvdecCap {
        NvdecCap {
            codec,
            bit_depth,
            supported,
            max_width: if supported { 8192 } else { 0 },
            max_height: if supported { 8192 } else { 0 },
            min_width: if supported { 48 } else { 0 },
            min_height: if supported { 16 } else { 0 },
            max_macroblocks: if supported { 262_144 } else { 0 },
        }
    }

    /// What the H200's NVDEC answered (devices.json of the GPU runs): no AV1.
    fn h200() -> Result<Vec<NvdecCap>, String> {
        Ok(vec![
            cap("mpeg2", 8, true),
            cap("h264", 8, true),
            cap("hevc", 8, true),
            cap("hevc", 10, true),
            cap("vp9", 8, true),
            cap("vp9", 10, true),
            cap("av1", 8, false),
            cap("av1", 10, false),
            cap("vp8", 8, true),
        ])
    }

    /// An NVDEC with AV1 (Ampere and later consumer GPUs).
    fn with_av1() -> Result<Vec<NvdecCap>, String> {
        let mut caps = h200().unwrap();
        caps.retain(|c| c.codec != "av1");
        caps.push(cap("av1", 8, true));
        caps.push(cap("av1", 10, true));
        Ok(caps)
    }

    fn stream(codec: &str, bit_depth: u8, pixel_format: &str, size: (u32, u32)) -> StreamShape {
        StreamShape {
            codec: codec.into(),
            bit_depth,
            yuv420: Some(pixel_format.starts_with("yuv420") || pixel_format.starts_with("nv12")),
            pixel_format: pixel_format.into(),
            size,
        }
    }

    fn software_reason(route: DecodeRoute) -> String {
        match route {
            DecodeRoute::Software(why) => why,
            other => panic!("expected software, got {other:?}"),
        }
    }

    #[test]
    fn what_nvdec_decodes_goes_to_it_by_ffmpegs_default_decoder() {
        let hd = (1920, 1080);
        for (codec, depth, format) in [
            ("h264", 8, "yuv420p"),
            ("hevc", 10, "yuv420p10le"),
            ("vp9", 8, "yuv420p"),
            ("mpeg2video", 8, "yuv420p"),
        ] {
            let route = route(&stream(codec, depth, format, hd), &h200());
            assert_eq!(route, DecodeRoute::Nvdec(None), "{codec} {depth}-bit");
        }
    }

    #[test]
    fn av1_goes_to_ffmpegs_native_decoder_where_nvdec_has_it_else_to_software() {
        let av1 = stream("av1", 8, "yuv420p", (1920, 1080));
        assert_eq!(route(&av1, &with_av1()), DecodeRoute::Nvdec(Some("av1")));
        let why = software_reason(route(&av1, &h200()));
        assert_eq!(why, "NVDEC on this GPU does not decode 8-bit AV1");
    }

    #[test]
    fn a_depth_nvdec_refuses_is_decoded_in_software_one_not_asked_is_left_to_ffmpeg() {
        let mut caps = h200().unwrap();
        caps.push(cap("h264", 10, false));
        let high10 = stream("h264", 10, "yuv420p10le", (1920, 1080));
        let why = software_reason(route(&high10, &Ok(caps.clone())));
        assert_eq!(why, "NVDEC on this GPU does not decode 10-bit H.264");
        // 12-bit HEVC where NVDEC says yes (P016 surfaces).
        caps.push(cap("hevc", 12, true));
        let main12 = stream("hevc", 12, "yuv420p12le", (3840, 2160));
        assert_eq!(route(&main12, &Ok(caps)), DecodeRoute::Nvdec(None));
        // A depth RAVE did not ask about: FFmpeg decides, as before.
        let nine = stream("h264", 9, "yuv420p9le", (1920, 1080));
        assert_eq!(route(&nine, &h200()), DecodeRoute::Nvdec(None));
    }

    #[test]
    fn chroma_other_than_4_2_0_is_decoded_in_software() {
        for format in ["yuv422p10le", "yuv444p", "gray", "gbrp"] {
            let mut s = stream("hevc", 8, format, (1920, 1080));
            s.yuv420 = Some(false);
            let why = software_reason(route(&s, &h200()));
            assert!(why.contains(format) && why.contains("4:2:0"), "{why}");
        }
    }

    #[test]
    fn codecs_without_nvdec_are_decoded_in_software_and_ffmpegs_other_hwaccels_left_to_it() {
        for codec in ["prores", "dnxhd", "ffv1", "rawvideo", "png"] {
            let why = software_reason(route(
                &stream(codec, 10, "yuv422p10le", (640, 360)),
                &h200(),
            ));
            assert_eq!(why, format!("NVDEC does not decode {codec}"));
        }
        for codec in LEFT_TO_FFMPEG {
            let s = stream(codec, 8, "yuv420p", (640, 360));
            assert_eq!(route(&s, &h200()), DecodeRoute::Nvdec(None), "{codec}");
        }
    }

    #[test]
    fn sizes_outside_nvdecs_limits_are_decoded_in_software() {
        let large = stream("h264", 8, "yuv420p", (8192 + 16, 1080));
        assert!(software_reason(route(&large, &h200())).contains("larger than"));
        // Within each side's limit but over the macroblock count.
        let many = stream("h264", 8, "yuv420p", (8192, 8192));
        let mut caps = h200().unwrap();
        caps.iter_mut().for_each(|c| c.max_macroblocks = 65_536);
        let why = software_reason(route(&many, &Ok(caps)));
        assert_eq!(
            why,
            "8192x8192 is 262144 macroblocks, more than NVDEC decodes of H.264 on this GPU (65536)"
        );
        let tiny = stream("h264", 8, "yuv420p", (32, 16));
        let why = software_reason(route(&tiny, &h200()));
        assert_eq!(
            why,
            "32x16 is smaller than NVDEC decodes H.264 on this GPU (48x16)"
        );
    }

    #[test]
    fn an_unknown_format_or_size_is_left_to_ffmpeg_but_not_for_av1_and_no_caps_means_software() {
        let mut s = stream("h264", 8, "unknown", (0, 0));
        s.yuv420 = None;
        assert_eq!(route(&s, &h200()), DecodeRoute::Nvdec(None));
        let sized = stream("hevc", 8, "yuv420p", (0, 0));
        assert_eq!(route(&sized, &h200()), DecodeRoute::Nvdec(None));
        // AV1 on NVDEC needs FFmpeg's native decoder, which cannot fall back to software.
        let mut av1 = stream("av1", 8, "unknown", (1920, 1080));
        av1.yuv420 = None;
        assert!(software_reason(route(&av1, &with_av1())).contains("no software fallback"));
        let why = software_reason(route(&s, &Err("libnvcuvid.so.1 missing".into())));
        assert_eq!(why, "NVDEC is not available (libnvcuvid.so.1 missing)");
    }
}
