//! One convolution's parameters for the streamed kernels of `conv3x3_streamed.cu`: the
//! weights in k-steps of 16 input channels, each k-step's taps as wgmma core matrices, in
//! the form the layer's output channels pick (64 output channels, or 2 rows x 32).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::f16;

use super::device_conv::negative_slopes;
use super::{GpuError, driver_error};
use crate::network::{Activation, Conv3x3};

/// Input channels a k-step reduces over.
pub(super) const KSTEP_CHANNELS: usize = 16;
/// Rows of wgmma's M (output channels, or 2 output rows x 32 channels when stacked).
const M: usize = 64;
/// Most output channels of the stacked form.
pub(super) const STACKED_CHANNELS: usize = 32;

/// A layer uploaded for the streamed kernels.
pub struct StreamedConv {
    pub(super) weight: CudaSlice<u16>,
    pub(super) bias: CudaSlice<f32>,
    pub(super) slope: CudaSlice<f32>,
    pub(super) ksteps: usize,
    pub(super) stacked: bool,
    pub(super) out_channels: usize,
    pub(super) activated: bool,
}

/// Taps a k-step holds: 9, or 12 when stacked (two output rows span four input rows).
pub(super) fn taps(stacked: bool) -> usize {
    if stacked { 12 } else { 9 }
}

/// `[out][in][ky][kx]` (ONNX) -> `[kstep][tap][chunk 2][m 64][8]` half bits. Unstacked:
/// m is the output channel and tap = ky * 3 + kx. Stacked: m = dy * 32 + output channel and
/// tap = (dy + ky) * 3 + kx (row dy of the pair sees the four staged rows from its own),
/// zeros where a tap row is outside row dy's window. Zeros past the layer's channels.
pub(super) fn streamed_tiles(conv: &Conv3x3, stacked: bool) -> Vec<u16> {
    let (cin, cout) = (conv.in_channels, conv.out_channels);
    let ksteps = cin.div_ceil(KSTEP_CHANNELS);
    let taps = taps(stacked);
    let mut out = vec![0u16; ksteps * taps * KSTEP_CHANNELS * M];
    let rows = if stacked { 2 } else { 1 };
    for dy in 0..rows {
        for o in 0..cout {
            let m = dy * STACKED_CHANNELS + o;
            for i in 0..cin {
                let (ks, c, e) = (i / KSTEP_CHANNELS, (i % KSTEP_CHANNELS) / 8, i % 8);
                for ky in 0..3 {
                    for kx in 0..3 {
                        let tap = (dy + ky) * 3 + kx;
                        let v = conv.weight[(o * cin + i) * 9 + ky * 3 + kx];
                        out[(((ks * taps + tap) * 2 + c) * M + m) * 8 + e] =
                            f16::from_f32(v).to_bits();
                    }
                }
            }
        }
    }
    out
}

/// Why the streamed kernels cannot run `conv`, if they cannot.
pub fn streamed_refusal(conv: &Conv3x3) -> Option<String> {
    if conv.pad != 1 {
        return Some(format!(
            "{}: padding {} (the streamed kernels pad 1)",
            conv.node, conv.pad
        ));
    }
    if conv.out_channels > M {
        return Some(format!(
            "{}: {} output channels (the streamed kernels write up to {M})",
            conv.node, conv.out_channels
        ));
    }
    None
}

impl StreamedConv {
    /// Upload `conv` followed by `activation` (Identity or LeakyReLU) for the streamed
    /// kernels, stacked where it has at most 32 output channels.
    pub fn upload(
        stream: &Arc<CudaStream>,
        conv: &Conv3x3,
        activation: &Activation,
    ) -> Result<Self, GpuError> {
        if let Some(why) = streamed_refusal(conv) {
            return Err(GpuError(why));
        }
        let cout = conv.out_channels;
        let (slope, activated) = negative_slopes(conv, activation)?;
        let stacked = cout <= STACKED_CHANNELS;
        let mut bias = conv.bias.clone();
        bias.resize(M, 0.0);
        let mut slope = slope;
        slope.resize(M, 1.0);
        let up = |what: &'static str| driver_error(what);
        Ok(Self {
            weight: stream
                .clone_htod(&streamed_tiles(conv, stacked))
                .map_err(up("uploading a layer's weights"))?,
            bias: stream.clone_htod(&bias).map_err(up("uploading a bias"))?,
            slope: stream.clone_htod(&slope).map_err(up("uploading slopes"))?,
            ksteps: conv.in_channels.div_ceil(KSTEP_CHANNELS),
            stacked,
            out_channels: cout,
            activated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(cin: usize, cout: usize) -> Conv3x3 {
        Conv3x3 {
            out_channels: cout,
            in_channels: cin,
            weight: (0..cout * cin * 9).map(|i| (i % 1999) as f32).collect(),
            bias: vec![0.0; cout],
            pad: 1,
            node: "t".into(),
        }
    }

    fn at(c: &Conv3x3, o: usize, i: usize, ky: usize, kx: usize) -> u16 {
        f16::from_f32(c.weight[(o * c.in_channels + i) * 9 + ky * 3 + kx]).to_bits()
    }

    #[test]
    fn unstacked_k_steps_hold_sixteen_input_channels_per_tap() {
        let c = conv(96, 64);
        let t = streamed_tiles(&c, false);
        assert_eq!(t.len(), 6 * 9 * 16 * 64);
        // out 37, in 50 (k-step 3, chunk 0, element 2), ky 2, kx 1 (tap 7).
        assert_eq!(
            t[(((3 * 9 + 7) * 2) * 64 + 37) * 8 + 2],
            at(&c, 37, 50, 2, 1)
        );
        // in 63: k-step 3, chunk 1, element 7.
        assert_eq!(t[(((3 * 9) * 2 + 1) * 64 + 5) * 8 + 7], at(&c, 5, 63, 0, 0));
    }

    #[test]
    fn stacked_rows_see_their_window_shifted_by_one_tap_row() {
        let c = conv(64, 32);
        let t = streamed_tiles(&c, true);
        assert_eq!(t.len(), 4 * 12 * 16 * 64);
        let idx = |ks: usize, tap: usize, ch: usize, m: usize, e: usize| {
            (((ks * 12 + tap) * 2 + ch) * 64 + m) * 8 + e
        };
        // Row 0 (m < 32): tap rows 0..2 are ky 0..2, tap row 3 is empty.
        assert_eq!(t[idx(1, 3 + 2, 1, 9, 4)], at(&c, 9, 16 + 8 + 4, 1, 2));
        assert!((0..3).all(|kx| t[idx(0, 9 + kx, 0, 9, 0)] == 0));
        // Row 1 (m = 32 + o): tap row 0 is empty, tap rows 1..3 are ky 0..2.
        assert!((0..3).all(|kx| t[idx(0, kx, 0, 32 + 9, 0)] == 0));
        assert_eq!(t[idx(0, 9 + 2, 0, 32 + 9, 3)], at(&c, 9, 3, 2, 2));
        assert_eq!(t[idx(0, 3, 0, 32 + 9, 3)], at(&c, 9, 3, 0, 0));
    }

    #[test]
    fn channels_past_the_layer_are_zero_and_wide_or_unpadded_layers_are_refused() {
        let c = conv(3, 3);
        let t = streamed_tiles(&c, true);
        assert_eq!(t.len(), 12 * 16 * 64);
        let nonzero = t.iter().filter(|&&v| v != 0).count();
        // 3 x 3 x 9 weights, each in two stacked rows; weight value 0 (index 0) counts once.
        assert_eq!(nonzero, 2 * 3 * 3 * 9 - 2);
        assert!(streamed_refusal(&conv(64, 3)).is_none());
        let mut padded = conv(64, 64);
        padded.pad = 0;
        assert!(streamed_refusal(&padded).is_some());
        assert!(streamed_refusal(&conv(64, 66)).is_some());
        assert!(streamed_refusal(&conv(192, 64)).is_none());
    }
}
