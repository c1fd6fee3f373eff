//! The layer math, one plain function per operation, exactly as ONNX defines it.

use super::FeatureMap;
use crate::network::{Activation, Conv3x3};

/// 3x3 convolution with bias and zero padding `conv.pad` (stride 1).
pub fn conv3x3(x: &FeatureMap, conv: &Conv3x3) -> FeatureMap {
    assert_eq!(x.channels, conv.in_channels, "{}: channels", conv.node);
    let p = conv.pad as isize;
    let (h, w) = (x.height as isize, x.width as isize);
    let (oh, ow) = (h + 2 * p - 2, w + 2 * p - 2);
    assert!(oh > 0 && ow > 0, "{}: input too small", conv.node);
    let (oh, ow) = (oh as usize, ow as usize);
    let mut out = FeatureMap::zeros(conv.out_channels, oh, ow);
    for o in 0..conv.out_channels {
        let plane = &mut out.data[o * oh * ow..(o + 1) * oh * ow];
        plane.fill(conv.bias[o]);
        for c in 0..conv.in_channels {
            let src = x.plane(c);
            for ky in 0..3isize {
                for kx in 0..3isize {
                    let wgt = conv.weight
                        [((o * conv.in_channels + c) * 3 + ky as usize) * 3 + kx as usize];
                    // Output (y, x) reads input (y + ky - p, x + kx - p).
                    let (dy, dx) = (ky - p, kx - p);
                    let x0 = (-dx).max(0) as usize;
                    let x1 = ((w - dx).min(ow as isize)).max(0) as usize;
                    for y in 0..oh {
                        let sy = y as isize + dy;
                        if sy < 0 || sy >= h || x0 >= x1 {
                            continue;
                        }
                        let row = &src[sy as usize * x.width..][..x.width];
                        let dst = &mut plane[y * ow..(y + 1) * ow];
                        for xx in x0..x1 {
                            dst[xx] += wgt * row[(xx as isize + dx) as usize];
                        }
                    }
                }
            }
        }
    }
    out
}

/// Apply `a` in place (PReLU: one slope per channel).
pub fn activate(x: &mut FeatureMap, a: &Activation) {
    let n = x.height * x.width;
    match a {
        Activation::Identity => {}
        Activation::PRelu(slopes) => {
            for (c, plane) in x.data.chunks_mut(n).enumerate() {
                let s = slopes[c];
                plane.iter_mut().filter(|v| **v < 0.0).for_each(|v| *v *= s);
            }
        }
        Activation::LeakyRelu(alpha) => {
            x.data
                .iter_mut()
                .filter(|v| **v < 0.0)
                .for_each(|v| *v *= alpha);
        }
    }
}

/// `x += scale * y`.
pub fn add_scaled(x: &mut FeatureMap, y: &FeatureMap, scale: f32) {
    assert_eq!(
        (x.channels, x.height, x.width),
        (y.channels, y.height, y.width)
    );
    x.data
        .iter_mut()
        .zip(&y.data)
        .for_each(|(a, b)| *a += scale * b);
}

/// Channel concatenation.
pub fn concat(maps: &[&FeatureMap]) -> FeatureMap {
    let (h, w) = (maps[0].height, maps[0].width);
    let mut data = Vec::with_capacity(maps.iter().map(|m| m.data.len()).sum());
    for m in maps {
        assert_eq!((m.height, m.width), (h, w));
        data.extend_from_slice(&m.data);
    }
    let channels = maps.iter().map(|m| m.channels).sum();
    FeatureMap {
        channels,
        height: h,
        width: w,
        data,
    }
}

/// DepthToSpace in CRD order (PyTorch's pixel shuffle):
/// `out[c][y*b + i][x*b + j] = in[c*b*b + i*b + j][y][x]`.
pub fn depth_to_space(x: &FeatureMap, b: usize) -> FeatureMap {
    assert_eq!(x.channels % (b * b), 0);
    let mut out = FeatureMap::zeros(x.channels / (b * b), x.height * b, x.width * b);
    for c in 0..out.channels {
        for i in 0..b {
            for j in 0..b {
                let src = x.plane(c * b * b + i * b + j);
                for y in 0..x.height {
                    for xx in 0..x.width {
                        let d = out.index(c, y * b + i, xx * b + j);
                        out.data[d] = src[y * x.width + xx];
                    }
                }
            }
        }
    }
    out
}

/// Nearest upsampling by an integer factor (asymmetric coordinates, floor).
pub fn nearest_upsample(x: &FeatureMap, f: usize) -> FeatureMap {
    let mut out = FeatureMap::zeros(x.channels, x.height * f, x.width * f);
    for c in 0..x.channels {
        for y in 0..out.height {
            for xx in 0..out.width {
                let d = out.index(c, y, xx);
                out.data[d] = x.at(c, y / f, xx / f);
            }
        }
    }
    out
}

/// The four bicubic weights for fraction `t` with coefficient `a` (ONNX Resize, cubic).
fn cubic_weights(t: f32, a: f32) -> [f32; 4] {
    let far = |d: f32| ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    let near = |d: f32| ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// Source taps (clamped indices, weights) of each output position along one axis of a
/// half_pixel cubic resize by `factor` (a = -0.75, exclude_outside 0).
fn cubic_taps(len: usize, out_len: usize, factor: f32) -> Vec<[(usize, f32); 4]> {
    (0..out_len)
        .map(|o| {
            let src = (o as f32 + 0.5) / factor - 0.5;
            let base = src.floor();
            let w = cubic_weights(src - base, -0.75);
            let mut taps = [(0, 0.0); 4];
            for (k, tap) in taps.iter_mut().enumerate() {
                let i = (base as isize - 1 + k as isize).clamp(0, len as isize - 1);
                *tap = (i as usize, w[k]);
            }
            taps
        })
        .collect()
}

/// Bicubic resize by `factor` (ONNX Resize: cubic, half_pixel, a = -0.75, edges clamped);
/// the output size is `floor(size * factor)`.
pub fn cubic_resize(x: &FeatureMap, factor: f32) -> FeatureMap {
    let oh = (x.height as f32 * factor).floor() as usize;
    let ow = (x.width as f32 * factor).floor() as usize;
    let ty = cubic_taps(x.height, oh, factor);
    let tx = cubic_taps(x.width, ow, factor);
    let mut out = FeatureMap::zeros(x.channels, oh, ow);
    let mut rows = vec![0.0f32; x.height * ow];
    for c in 0..x.channels {
        let src = x.plane(c);
        for y in 0..x.height {
            for (o, taps) in tx.iter().enumerate() {
                rows[y * ow + o] = taps.iter().map(|&(i, w)| w * src[y * x.width + i]).sum();
            }
        }
        for (o, taps) in ty.iter().enumerate() {
            for xx in 0..ow {
                let d = out.index(c, o, xx);
                out.data[d] = taps.iter().map(|&(i, w)| w * rows[i * ow + xx]).sum();
            }
        }
    }
    out
}

/// Pad by one on every side, copying the edge (ONNX Pad, mode edge).
pub fn edge_pad(x: &FeatureMap) -> FeatureMap {
    let mut out = FeatureMap::zeros(x.channels, x.height + 2, x.width + 2);
    for c in 0..x.channels {
        for y in 0..out.height {
            for xx in 0..out.width {
                let sy = y.saturating_sub(1).min(x.height - 1);
                let sx = xx.saturating_sub(1).min(x.width - 1);
                let d = out.index(c, y, xx);
                out.data[d] = x.at(c, sy, sx);
            }
        }
    }
    out
}

/// Add a row above and below `x` (`vertical`) or a column left and right, each a copy of
/// the edge row/column with its channels taken through `before` / `after`
/// (the folded tail's Slice + Gather + Concat).
pub fn remapped_edges(
    x: &FeatureMap,
    vertical: bool,
    before: &[usize],
    after: &[usize],
) -> FeatureMap {
    let (dh, dw) = if vertical { (2, 0) } else { (0, 2) };
    let mut out = FeatureMap::zeros(x.channels, x.height + dh, x.width + dw);
    for c in 0..x.channels {
        for y in 0..out.height {
            for xx in 0..out.width {
                let (pos, len) = if vertical {
                    (y, x.height)
                } else {
                    (xx, x.width)
                };
                let (src_c, p) = match pos {
                    0 => (before[c], 0),
                    p if p == len + 1 => (after[c], len - 1),
                    p => (c, p - 1),
                };
                let v = if vertical {
                    x.at(src_c, p, xx)
                } else {
                    x.at(src_c, y, p)
                };
                let d = out.index(c, y, xx);
                out.data[d] = v;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(c: usize, h: usize, w: usize) -> FeatureMap {
        let data = (0..c * h * w).map(|i| i as f32).collect();
        FeatureMap::from_planar(c, h, w, data).unwrap()
    }

    #[test]
    fn conv_with_a_centre_tap_is_the_identity_plus_bias() {
        let x = map(1, 3, 4);
        let mut weight = vec![0.0; 9];
        weight[4] = 2.0;
        let conv = Conv3x3 {
            out_channels: 1,
            in_channels: 1,
            weight,
            bias: vec![1.0],
            pad: 1,
            node: "c".into(),
        };
        let y = conv3x3(&x, &conv);
        assert_eq!(
            y.data,
            x.data.iter().map(|v| 2.0 * v + 1.0).collect::<Vec<_>>()
        );
    }

    #[test]
    fn conv_padding_reads_zeros_outside() {
        let x = FeatureMap::from_planar(1, 2, 2, vec![1.0; 4]).unwrap();
        let conv = Conv3x3 {
            out_channels: 1,
            in_channels: 1,
            weight: vec![1.0; 9],
            bias: vec![0.0],
            pad: 1,
            node: "c".into(),
        };
        assert_eq!(conv3x3(&x, &conv).data, vec![4.0; 4]);
        let valid = Conv3x3 { pad: 0, ..conv };
        let y = conv3x3(&map(1, 3, 3), &valid);
        assert_eq!((y.height, y.width, y.data[0]), (1, 1, 36.0));
    }

    #[test]
    fn pixel_shuffle_places_sub_pixels_row_major() {
        let x = map(4, 1, 1);
        assert_eq!(depth_to_space(&x, 2).data, vec![0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn cubic_weights_sum_to_one_and_interpolate() {
        for t in [0.0, 0.25, 0.5, 0.9] {
            let s: f32 = cubic_weights(t, -0.75).iter().sum();
            assert!((s - 1.0).abs() < 1e-6);
        }
        assert_eq!(cubic_weights(0.0, -0.75), [0.0, 1.0, 0.0, 0.0]);
        assert_eq!(
            cubic_weights(0.5, -0.75),
            [-0.09375, 0.59375, 0.59375, -0.09375]
        );
    }
}
