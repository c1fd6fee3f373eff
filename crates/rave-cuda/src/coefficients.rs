//! Matrix and quantisation constants for one (matrix, range, bit depth) combination.

use rave_core::color::{ColorMatrix, ColorRange};

/// Everything a conversion needs, precomputed once per frame.
#[derive(Debug, Clone, Copy)]
pub struct Coefficients {
    /// Red luma weight.
    pub kr: f32,
    /// Green luma weight.
    pub kg: f32,
    /// Blue luma weight.
    pub kb: f32,
    /// Code value of black.
    pub y_offset: f32,
    /// Code values between black and white.
    pub y_scale: f32,
    /// Code value of zero chroma.
    pub c_offset: f32,
    /// Code values spanning chroma -0.5..0.5.
    pub c_scale: f32,
    /// Largest code value.
    pub max_code: f32,
    /// `1 / y_scale`.
    pub inv_y_scale: f32,
    /// `1 / c_scale`.
    pub inv_c_scale: f32,
    /// `1 / kg`.
    pub inv_kg: f32,
    /// `2 (1 - kr)`: Cr' to R - Y'.
    pub cr_to_r: f32,
    /// `2 (1 - kb)`: Cb' to B - Y'.
    pub cb_to_b: f32,
    /// `1 / (2 (1 - kb))`: B - Y' to Cb'.
    pub cb_from_b: f32,
    /// `1 / (2 (1 - kr))`: R - Y' to Cr'.
    pub cr_from_r: f32,
}

impl Coefficients {
    /// Constants for the given matrix, range and bit depth.
    pub fn new(matrix: ColorMatrix, range: ColorRange, bit_depth: u8) -> Self {
        let (kr, kb) = matrix.kr_kb();
        let (kr, kb) = (kr as f32, kb as f32);
        let step = (1u32 << (bit_depth - 8)) as f32;
        let max_code = ((1u32 << bit_depth) - 1) as f32;
        let (y_offset, y_scale, c_scale) = match range {
            ColorRange::Limited => (16.0 * step, 219.0 * step, 224.0 * step),
            ColorRange::Full => (0.0, max_code, max_code),
        };
        let kg = 1.0 - kr - kb;
        // Reciprocals are computed once here so the per-sample work (here and in the GPU
        // kernels, which use these same values) is multiplications only.
        Self {
            kr,
            kg,
            kb,
            y_offset,
            y_scale,
            c_offset: 128.0 * step,
            c_scale,
            max_code,
            inv_y_scale: 1.0 / y_scale,
            inv_c_scale: 1.0 / c_scale,
            inv_kg: 1.0 / kg,
            cr_to_r: 2.0 * (1.0 - kr),
            cb_to_b: 2.0 * (1.0 - kb),
            cb_from_b: 1.0 / (2.0 * (1.0 - kb)),
            cr_from_r: 1.0 / (2.0 * (1.0 - kr)),
        }
    }

    /// Normalised (Y', Cb', Cr') of one sample triple -> RGB in [0, 1].
    #[inline]
    pub fn to_rgb(&self, y: f32, cb: f32, cr: f32) -> [f32; 3] {
        let yn = (y - self.y_offset) * self.inv_y_scale;
        let cbn = (cb - self.c_offset) * self.inv_c_scale;
        let crn = (cr - self.c_offset) * self.inv_c_scale;
        let r = yn + self.cr_to_r * crn;
        let b = yn + self.cb_to_b * cbn;
        let g = (yn - self.kr * r - self.kb * b) * self.inv_kg;
        [unit(r), unit(g), unit(b)]
    }

    /// RGB in [0, 1] -> (Y code value, Cb', Cr' normalised to -0.5..0.5).
    #[inline]
    pub fn luma_chroma(&self, r: f32, g: f32, b: f32) -> (f32, f32, f32) {
        let (r, g, b) = (unit(r), unit(g), unit(b));
        let yn = self.kr * r + self.kg * g + self.kb * b;
        let cbn = (b - yn) * self.cb_from_b;
        let crn = (r - yn) * self.cr_from_r;
        (self.y_offset + self.y_scale * yn, cbn, crn)
    }

    /// Quantise a normalised chroma value to a code value.
    #[inline]
    pub fn chroma_code(&self, c: f32) -> u16 {
        self.quantise(self.c_offset + self.c_scale * c)
    }

    /// Round and clamp a code value (NaN to 0, as the GPU kernels' `fmaxf` does).
    #[inline]
    pub fn quantise(&self, v: f32) -> u16 {
        v.round().max(0.0).min(self.max_code) as u16
    }
}

/// `v` clamped to [0, 1], NaN to 0 like the GPU kernels' `fminf(fmaxf(v, 0), 1)`: a model
/// that outputs NaN (an FP16 overflow) gives black on either path, not `clamp`'s NaN, which
/// quantised to code 0 in every plane (green, outside the limited range).
#[inline]
#[allow(clippy::manual_clamp)] // `clamp` keeps NaN, which is what this must not do.
fn unit(v: f32) -> f32 {
    v.max(0.0).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_from_the_model_is_black_and_out_of_range_values_clamp() {
        let k = Coefficients::new(ColorMatrix::Bt709, ColorRange::Limited, 8);
        let (y, cb, cr) = k.luma_chroma(f32::NAN, f32::NAN, f32::NAN);
        assert_eq!(
            (k.quantise(y), k.chroma_code(cb), k.chroma_code(cr)),
            (16, 128, 128)
        );
        let (y, cb, cr) = k.luma_chroma(f32::INFINITY, 2.0, 7.5);
        assert_eq!(
            (k.quantise(y), k.chroma_code(cb), k.chroma_code(cr)),
            (235, 128, 128)
        );
        assert_eq!(k.quantise(f32::NAN), 0);
        assert_eq!(k.quantise(1e9), 255);
        assert_eq!(k.to_rgb(f32::NAN, 128.0, 128.0), [0.0; 3]);
    }
}
