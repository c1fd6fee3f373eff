//! Resolving a stream's colour description into what the conversions need: the matrix and
//! range to use (defaults where the file says nothing) and the sample bit depth.

use ffmpeg_next::ffi::{AVColorRange, AVColorSpace};
use ffmpeg_next::format::Pixel;
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};

/// Significant bits per component of a pixel format (8 when unknown).
pub fn bit_depth(format: Pixel) -> u8 {
    crate::sys::pixel_bit_depth(format.into()).unwrap_or(8)
}

/// Whether the pixel format is one of the JPEG ("full range") YUV variants.
fn is_jpeg_format(format: Pixel) -> bool {
    matches!(
        format,
        Pixel::YUVJ420P | Pixel::YUVJ422P | Pixel::YUVJ444P | Pixel::YUVJ440P | Pixel::YUVJ411P
    )
}

/// The matrix, range and depth to convert with. Unspecified matrices default by frame
/// height (BT.709 from 720 lines, else BT.601); unspecified range defaults to limited.
pub fn resolve(space: AVColorSpace, range: AVColorRange, format: Pixel, height: u32) -> ColorInfo {
    let matrix = match space {
        AVColorSpace::AVCOL_SPC_BT709 => ColorMatrix::Bt709,
        AVColorSpace::AVCOL_SPC_BT470BG
        | AVColorSpace::AVCOL_SPC_SMPTE170M
        | AVColorSpace::AVCOL_SPC_SMPTE240M
        | AVColorSpace::AVCOL_SPC_FCC => ColorMatrix::Bt601,
        AVColorSpace::AVCOL_SPC_BT2020_NCL | AVColorSpace::AVCOL_SPC_BT2020_CL => {
            ColorMatrix::Bt2020Ncl
        }
        _ => ColorMatrix::default_for_height(height),
    };
    let range = if range == AVColorRange::AVCOL_RANGE_JPEG || is_jpeg_format(format) {
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
}
