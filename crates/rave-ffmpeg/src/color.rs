//! Resolving a stream's colour description into what the conversions need (the matrix and
//! range to use, defaults where the file says nothing, and the bit depth), and the tags
//! that tell players the output was converted with exactly those.

use ffmpeg_next::ffi::{self, AVColorRange, AVColorSpace};
use ffmpeg_next::format::Pixel;
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};

use crate::sys::RawColor;

/// Significant bits per component of a pixel format (8 when unknown).
pub fn bit_depth(format: Pixel) -> u8 {
    crate::pixel_format::bit_depth(format.into()).unwrap_or(8)
}

/// Whether the pixel format is one of the JPEG ("full range") YUV variants.
fn is_jpeg_format(format: Pixel) -> bool {
    matches!(
        format,
        Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P | Pixel::YUVJ440P | Pixel::YUVJ411P
    )
}

/// Whether the pixel format holds RGB samples (PNG, FFV1 rgb, bgra, rgb48, gbrp, ...).
pub fn is_rgb(format: Pixel) -> bool {
    crate::pixel_format::is_rgb(format.into())
}

/// The matrix, range and depth to convert with. Unspecified matrices default by frame
/// height (BT.709 from 720 lines, else BT.601); unspecified range defaults to limited.
/// RGB sources are turned into YUV by RAVE itself: with the matrix their tag names if it is
/// a YUV matrix, else BT.709 (sRGB's primaries), and always into limited range (their range
/// tag describes the RGB samples, not the YUV RAVE makes).
pub fn resolve(space: AVColorSpace, range: AVColorRange, format: Pixel, height: u32) -> ColorInfo {
    let rgb = is_rgb(format);
    let matrix = match space {
        AVColorSpace::AVCOL_SPC_BT709 => ColorMatrix::Bt709,
        AVColorSpace::AVCOL_SPC_BT470BG
        | AVColorSpace::AVCOL_SPC_SMPTE170M
        | AVColorSpace::AVCOL_SPC_SMPTE240M
        | AVColorSpace::AVCOL_SPC_FCC => ColorMatrix::Bt601,
        AVColorSpace::AVCOL_SPC_BT2020_NCL | AVColorSpace::AVCOL_SPC_BT2020_CL => {
            ColorMatrix::Bt2020Ncl
        }
        _ if rgb => ColorMatrix::Bt709,
        _ => ColorMatrix::default_for_height(height),
    };
    let range = if rgb {
        ColorRange::Limited
    } else if range == AVColorRange::AVCOL_RANGE_JPEG || is_jpeg_format(format) {
        ColorRange::Full
    } else {
        ColorRange::Limited
    };
    ColorInfo {
        matrix,
        range,
        bit_depth: if bit_depth(format) > 8 { 10 } else { 8 },
    }
}

/// FFmpeg's tag for a matrix.
fn space_of(matrix: ColorMatrix) -> AVColorSpace {
    match matrix {
        ColorMatrix::Bt601 => AVColorSpace::AVCOL_SPC_SMPTE170M,
        ColorMatrix::Bt709 => AVColorSpace::AVCOL_SPC_BT709,
        ColorMatrix::Bt2020Ncl => AVColorSpace::AVCOL_SPC_BT2020_NCL,
    }
}

/// swscale's name (`SWS_CS_*`) for a matrix.
pub fn sws_matrix(matrix: ColorMatrix) -> i32 {
    match matrix {
        ColorMatrix::Bt601 => ffi::SWS_CS_ITU601,
        ColorMatrix::Bt709 => ffi::SWS_CS_ITU709,
        ColorMatrix::Bt2020Ncl => ffi::SWS_CS_BT2020,
    }
}

/// The colour tags of the output of a source with codec parameters `params`, converted with
/// `color`. Primaries and transfer pass through. The matrix tag is the source's where it
/// names a YUV matrix (the YUV -> RGB -> YUV round trip uses one matrix both ways, so the
/// samples stay in the source's encoding); for RGB sources (converted with `color.matrix`)
/// and for unspecified tags it is `color.matrix`, so no player guesses differently (e.g. by
/// the upscaled height). The range tag is always `color.range`.
pub fn output_tags(params: &ffi::AVCodecParameters, color: &ColorInfo) -> RawColor {
    let format = Pixel::from(crate::frame_convert::pixel_from_raw(params.format));
    let named = !matches!(
        params.color_space,
        AVColorSpace::AVCOL_SPC_RGB
            | AVColorSpace::AVCOL_SPC_UNSPECIFIED
            | AVColorSpace::AVCOL_SPC_RESERVED
            | AVColorSpace::AVCOL_SPC_NB
    );
    let space = if named && !is_rgb(format) {
        params.color_space
    } else {
        space_of(color.matrix)
    };
    RawColor {
        space,
        range: match color.range {
            ColorRange::Limited => AVColorRange::AVCOL_RANGE_MPEG,
            ColorRange::Full => AVColorRange::AVCOL_RANGE_JPEG,
        },
        ..RawColor::from_params(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_height_and_format() {
        let c = resolve(
            AVColorSpace::AVCOL_SPC_UNSPECIFIED,
            AVColorRange::AVCOL_RANGE_UNSPECIFIED,
            Pixel::YUV420P,
            1080,
        );
        assert_eq!(
            (c.matrix, c.range, c.bit_depth),
            (ColorMatrix::Bt709, ColorRange::Limited, 8)
        );
        let c = resolve(
            AVColorSpace::AVCOL_SPC_UNSPECIFIED,
            AVColorRange::AVCOL_RANGE_UNSPECIFIED,
            Pixel::YUVJ420P,
            480,
        );
        assert_eq!((c.matrix, c.range), (ColorMatrix::Bt601, ColorRange::Full));
        let c = resolve(
            AVColorSpace::AVCOL_SPC_BT2020_NCL,
            AVColorRange::AVCOL_RANGE_MPEG,
            Pixel::YUV420P10LE,
            2160,
        );
        assert_eq!((c.matrix, c.bit_depth), (ColorMatrix::Bt2020Ncl, 10));
    }

    #[test]
    fn rgb_sources_convert_with_bt709_into_limited_range_at_any_height() {
        for (format, depth) in [
            (Pixel::RGB24, 8),
            (Pixel::BGRA, 8),
            (Pixel::GBRP, 8),
            (Pixel::RGB48LE, 10),
        ] {
            let c = resolve(
                AVColorSpace::AVCOL_SPC_RGB,
                AVColorRange::AVCOL_RANGE_JPEG,
                format,
                480,
            );
            assert_eq!(
                (c.matrix, c.range, c.bit_depth),
                (ColorMatrix::Bt709, ColorRange::Limited, depth),
                "{format:?}"
            );
        }
        let tagged = resolve(
            AVColorSpace::AVCOL_SPC_BT470BG,
            AVColorRange::AVCOL_RANGE_UNSPECIFIED,
            Pixel::RGB24,
            1080,
        );
        assert_eq!(tagged.matrix, ColorMatrix::Bt601);
    }

    #[test]
    fn output_tags_name_the_matrix_and_range_used() {
        let mut p = ffmpeg_next::codec::Parameters::new();
        // SAFETY: `p` owns freshly allocated parameters; plain fields.
        let raw = unsafe { &mut *p.as_mut_ptr() };
        raw.format = ffi::AVPixelFormat::AV_PIX_FMT_RGB24 as i32;
        raw.color_space = AVColorSpace::AVCOL_SPC_RGB;
        raw.color_range = AVColorRange::AVCOL_RANGE_JPEG;
        let c = resolve(raw.color_space, raw.color_range, Pixel::RGB24, 48);
        let t = output_tags(raw, &c);
        assert_eq!(t.space, AVColorSpace::AVCOL_SPC_BT709);
        assert_eq!(t.range, AVColorRange::AVCOL_RANGE_MPEG);
        raw.format = ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32;
        raw.color_space = AVColorSpace::AVCOL_SPC_UNSPECIFIED;
        raw.color_range = AVColorRange::AVCOL_RANGE_UNSPECIFIED;
        let c = resolve(raw.color_space, raw.color_range, Pixel::YUV420P, 360);
        let t = output_tags(raw, &c);
        assert_eq!(t.space, AVColorSpace::AVCOL_SPC_SMPTE170M);
        assert_eq!(t.range, AVColorRange::AVCOL_RANGE_MPEG);
        raw.color_space = AVColorSpace::AVCOL_SPC_BT470BG;
        let t = output_tags(raw, &c);
        assert_eq!(
            t.space,
            AVColorSpace::AVCOL_SPC_BT470BG,
            "a named YUV matrix is kept"
        );
    }
}
