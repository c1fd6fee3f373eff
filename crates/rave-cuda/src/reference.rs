//! Plain Rust YUV 4:2:0 <-> planar RGB conversions. Chroma is sited left (MPEG-2/H.264
//! default): horizontally on even luma columns, vertically between two luma rows.

use rave_core::color::ColorInfo;
use rave_core::frame::{RgbImage, YuvFrame, chroma_size};

use crate::coefficients::Coefficients;

/// Convert a 4:2:0 frame to planar RGB in [0, 1], upsampling chroma bilinearly.
pub fn yuv420_to_rgb(frame: &YuvFrame, color: &ColorInfo) -> RgbImage {
    let k = Coefficients::new(color.matrix, color.range, frame.bit_depth);
    let (w, h) = (frame.width as usize, frame.height as usize);
    let (cw, ch) = frame.chroma_size();
    let plane = w * h;
    let mut data = vec![0.0f32; 3 * plane];
    let mut cb_row = vec![0.0f32; w];
    let mut cr_row = vec![0.0f32; w];
    for y in 0..h {
        // Vertical position of this luma row in chroma rows: (y - 0.5) / 2.
        let (j0, j1, fy) = vertical_taps(y, ch);
        for x in 0..w {
            let i0 = x / 2;
            let i1 = if x % 2 == 1 { (i0 + 1).min(cw - 1) } else { i0 };
            let sample = |p: &[u16], i: usize, j: usize| p[j * cw + i] as f32;
            let bilinear = |p: &[u16]| {
                let top = 0.5 * (sample(p, i0, j0) + sample(p, i1, j0));
                let bottom = 0.5 * (sample(p, i0, j1) + sample(p, i1, j1));
                top + fy * (bottom - top)
            };
            cb_row[x] = bilinear(&frame.u);
            cr_row[x] = bilinear(&frame.v);
        }
        for x in 0..w {
            let rgb = k.to_rgb(frame.y[y * w + x] as f32, cb_row[x], cr_row[x]);
            data[y * w + x] = rgb[0];
            data[plane + y * w + x] = rgb[1];
            data[2 * plane + y * w + x] = rgb[2];
        }
    }
    RgbImage {
        width: frame.width,
        height: frame.height,
        data,
    }
}

/// The two chroma rows around luma row `y` and the weight of the second one.
fn vertical_taps(y: usize, ch: usize) -> (usize, usize, f32) {
    let j = y / 2;
    if y.is_multiple_of(2) {
        // 0.25 of a chroma row above chroma row j.
        (j.saturating_sub(1), j, if j == 0 { 1.0 } else { 0.75 })
    } else {
        (j, (j + 1).min(ch - 1), 0.25)
    }
}

/// Convert planar RGB to a 4:2:0 frame at `bit_depth`, filtering chroma [1 2 1]/4
/// horizontally around even columns and averaging row pairs vertically.
pub fn rgb_to_yuv420(image: &RgbImage, color: &ColorInfo, bit_depth: u8) -> YuvFrame {
    let k = Coefficients::new(color.matrix, color.range, bit_depth);
    let (w, h) = (image.width as usize, image.height as usize);
    let (cw, ch) = chroma_size(image.width, image.height);
    let plane = w * h;
    let mut y_plane = vec![0u16; plane];
    let mut cb_full = vec![0.0f32; plane];
    let mut cr_full = vec![0.0f32; plane];
    for idx in 0..plane {
        let (yv, cb, cr) = k.luma_chroma(
            image.data[idx],
            image.data[plane + idx],
            image.data[2 * plane + idx],
        );
        y_plane[idx] = k.quantise(yv);
        cb_full[idx] = cb;
        cr_full[idx] = cr;
    }
    let mut u = vec![0u16; cw * ch];
    let mut v = vec![0u16; cw * ch];
    for j in 0..ch {
        let rows = [2 * j, (2 * j + 1).min(h - 1)];
        for i in 0..cw {
            let cols = [(2 * i).saturating_sub(1), 2 * i, (2 * i + 1).min(w - 1)];
            let filtered = |p: &[f32]| {
                let mut acc = 0.0;
                for r in rows {
                    acc += 0.25 * p[r * w + cols[0]] + 0.5 * p[r * w + cols[1]];
                    acc += 0.25 * p[r * w + cols[2]];
                }
                acc * 0.5
            };
            u[j * cw + i] = k.chroma_code(filtered(&cb_full));
            v[j * cw + i] = k.chroma_code(filtered(&cr_full));
        }
    }
    YuvFrame {
        width: image.width,
        height: image.height,
        bit_depth,
        y: y_plane,
        u,
        v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rave_core::color::{ColorMatrix, ColorRange};

    fn color(matrix: ColorMatrix, range: ColorRange, bit_depth: u8) -> ColorInfo {
        ColorInfo {
            matrix,
            range,
            bit_depth,
        }
    }

    /// A deterministic frame with smooth chroma, so 4:2:0 resampling is nearly lossless.
    fn smooth_frame(w: u32, h: u32, bit_depth: u8, limited: bool) -> YuvFrame {
        let mut f = YuvFrame::zeroed(w, h, bit_depth);
        let s = 1u32 << (bit_depth - 8);
        // Keep luma far enough from black and white that the chroma offsets below stay in
        // the RGB gamut (clamping is, rightly, not reversible).
        let (lo, hi) = if limited {
            (40 * s, 210 * s)
        } else {
            (24 * s, 230 * s)
        };
        for y in 0..h {
            for x in 0..w {
                let t = (x * 7 + y * 13) % (hi - lo + 1);
                f.y[(y * w + x) as usize] = (lo + t) as u16;
            }
        }
        let (cw, ch) = f.chroma_size();
        for j in 0..ch {
            for i in 0..cw {
                f.u[j * cw + i] = (128 * s + 8 * s) as u16;
                f.v[j * cw + i] = (128 * s - 6 * s) as u16;
            }
        }
        f
    }

    #[test]
    fn known_values_bt709_limited() {
        let c = color(ColorMatrix::Bt709, ColorRange::Limited, 8);
        let mut f = YuvFrame::zeroed(2, 2, 8);
        f.y.fill(235);
        f.u.fill(128);
        f.v.fill(128);
        let rgb = yuv420_to_rgb(&f, &c);
        assert!(rgb.data.iter().all(|v| (v - 1.0).abs() < 1e-6), "white");
        f.y.fill(16);
        let rgb = yuv420_to_rgb(&f, &c);
        assert!(rgb.data.iter().all(|v| v.abs() < 1e-6), "black");
        // Pure red in BT.709 limited: Y=63, Cb=102, Cr=240.
        let red = RgbImage::new(2, 2, [vec![1.0; 4], vec![0.0; 4], vec![0.0; 4]].concat()).unwrap();
        let yuv = rgb_to_yuv420(&red, &c, 8);
        assert_eq!((yuv.y[0], yuv.u[0], yuv.v[0]), (63, 102, 240));
    }

    #[test]
    fn round_trip_within_one_code_value_all_matrices_ranges_depths_and_odd_sizes() {
        for matrix in [
            ColorMatrix::Bt601,
            ColorMatrix::Bt709,
            ColorMatrix::Bt2020Ncl,
        ] {
            for range in [ColorRange::Limited, ColorRange::Full] {
                for depth in [8u8, 10] {
                    for (w, h) in [(2, 2), (7, 5), (33, 17)] {
                        let c = color(matrix, range, depth);
                        let f = smooth_frame(w, h, depth, range == ColorRange::Limited);
                        let back = rgb_to_yuv420(&yuv420_to_rgb(&f, &c), &c, depth);
                        let max_diff = |a: &[u16], b: &[u16]| {
                            a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap()
                        };
                        let ctx = format!("{matrix:?} {range:?} {depth} {w}x{h}");
                        assert!(max_diff(&f.y, &back.y) <= 1, "luma {ctx}");
                        assert!(max_diff(&f.u, &back.u) <= 1, "cb {ctx}");
                        assert!(max_diff(&f.v, &back.v) <= 1, "cr {ctx}");
                    }
                }
            }
        }
    }

    #[test]
    fn chroma_is_sited_left_and_interpolated_between_columns() {
        let c = color(ColorMatrix::Bt709, ColorRange::Full, 8);
        let mut f = YuvFrame::zeroed(4, 2, 8);
        f.y.fill(128);
        f.v.copy_from_slice(&[128, 228]);
        f.u.fill(128);
        let rgb = yuv420_to_rgb(&f, &c);
        // Column 1 lies halfway between chroma columns 0 and 1; column 3 clamps to column 1.
        let r = &rgb.data[..4];
        assert!(r[0] < r[1] && r[1] < r[2], "{r:?}");
        assert!((r[2] - r[3]).abs() < 1e-6, "{r:?}");
    }
}
