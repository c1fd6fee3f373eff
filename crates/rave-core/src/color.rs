//! Colour description of a video stream: matrix, range, primaries, transfer, bit depth.

use serde::Serialize;

/// The YUV <-> RGB matrix (non-constant luminance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColorMatrix {
    /// ITU-R BT.601 (SD).
    Bt601,
    /// ITU-R BT.709 (HD).
    Bt709,
    /// ITU-R BT.2020 non-constant luminance (UHD/HDR).
    Bt2020Ncl,
}

impl ColorMatrix {
    /// Luma weights (Kr, Kb) of the matrix.
    pub fn kr_kb(self) -> (f64, f64) {
        match self {
            ColorMatrix::Bt601 => (0.299, 0.114),
            ColorMatrix::Bt709 => (0.2126, 0.0722),
            ColorMatrix::Bt2020Ncl => (0.2627, 0.0593),
        }
    }

    /// The matrix to assume when a stream does not say: BT.709 for HD, BT.601 for SD.
    pub fn default_for_height(height: u32) -> Self {
        if height >= 720 {
            ColorMatrix::Bt709
        } else {
            ColorMatrix::Bt601
        }
    }
}

/// Quantisation range of the YUV samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColorRange {
    /// "TV" range: Y 16..235, C 16..240 at 8 bit.
    Limited,
    /// "PC" range: 0..255 at 8 bit.
    Full,
}

/// What RAVE needs to convert a stream's pixels, and what it writes back on output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ColorInfo {
    /// Matrix used for conversion (resolved: never "unspecified").
    pub matrix: ColorMatrix,
    /// Range used for conversion (resolved).
    pub range: ColorRange,
    /// Bits per sample of the source (8 or 10).
    pub bit_depth: u8,
}
