//! One convolution layer's parameters on the device, in the layouts the kernels read.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::f16;

use super::{GpuError, driver_error};
use crate::network::{Activation, Conv3x3};

/// Most channels in and out of the layers the wgmma kernels take (conv3x3_wgmma.cu): the
/// output channels are the 64 rows of wgmma's M.
pub(super) const WGMMA_CHANNELS: usize = 64;

/// One layer's weights on the device: `[out][ky][kx][in]` half for the mma.sync kernels
/// (where the channel counts suit them), the wgmma kernels' form (up to 64 channels in and
/// out), and bias and negative slopes in f32.
pub struct DeviceConv {
    pub(super) mma: Option<MmaWeights>,
    pub(super) wgmma: Option<WgmmaWeights>,
    pub(super) in_channels: usize,
    pub(super) out_channels: usize,
    pub(super) activated: bool,
}

/// The mma.sync kernels' parameters: `cout` biases and slopes.
pub(super) struct MmaWeights {
    pub(super) weight: CudaSlice<u16>,
    pub(super) bias: CudaSlice<f32>,
    pub(super) slope: CudaSlice<f32>,
}

/// The wgmma kernels' parameters: `[tap][chunk][64][8]` half weights over `chunks` chunks
/// of 8 input channels, 64 biases and slopes (zeros / ones past `cout`).
pub(super) struct WgmmaWeights {
    pub(super) weight: CudaSlice<u16>,
    pub(super) bias: CudaSlice<f32>,
    pub(super) slope: CudaSlice<f32>,
    pub(super) chunks: usize,
}

/// The per-channel negative slopes of `activation` after `conv` (ones where there is none)
/// and whether it is applied at all.
pub(super) fn negative_slopes(
    conv: &Conv3x3,
    activation: &Activation,
) -> Result<(Vec<f32>, bool), GpuError> {
    let cout = conv.out_channels;
    match activation {
        Activation::Identity => Ok((vec![1.0; cout], false)),
        Activation::PRelu(s) if s.len() == cout => Ok((s.clone(), true)),
        Activation::PRelu(s) => Err(GpuError(format!(
            "{}: {} PReLU slopes for {cout} channels",
            conv.node,
            s.len()
        ))),
        Activation::LeakyRelu(a) => Ok((vec![*a; cout], true)),
    }
}

/// `[out][in][ky][kx]` (ONNX) -> `[out][ky][kx][in]`, half bits.
fn ohwi(conv: &Conv3x3) -> Vec<u16> {
    let (cin, cout) = (conv.in_channels, conv.out_channels);
    let mut out = vec![0u16; cout * 9 * cin];
    for o in 0..cout {
        for c in 0..cin {
            for tap in 0..9 {
                let v = conv.weight[(o * cin + c) * 9 + tap];
                out[(o * 9 + tap) * cin + c] = f16::from_f32(v).to_bits();
            }
        }
    }
    out
}

/// `[out][in][ky][kx]` -> `[tap][chunk][64][8]`, half bits, over `chunks` chunks of 8 input
/// channels: each tap's matrix as wgmma's core matrices (8 output channels x 8 input
/// channels, 16-byte rows), chunks 1024 bytes apart (see conv3x3_wgmma.cu); zeros past the
/// layer's channels.
fn wgmma_tiles(conv: &Conv3x3, chunks: usize) -> Vec<u16> {
    let (cin, cout, m) = (conv.in_channels, conv.out_channels, WGMMA_CHANNELS);
    let mut out = vec![0u16; 9 * chunks * m * 8];
    for o in 0..cout {
        for i in 0..cin {
            for tap in 0..9 {
                let v = conv.weight[(o * cin + i) * 9 + tap];
                out[((tap * chunks + i / 8) * m + o) * 8 + i % 8] = f16::from_f32(v).to_bits();
            }
        }
    }
    out
}

/// The input chunks of the wgmma kernel that takes `cin` channels: the kernels exist for
/// 16 and 64 (conv3x3_wgmma.cu).
fn wgmma_chunks(cin: usize) -> Option<usize> {
    match cin {
        1..=16 => Some(2),
        17..=64 => Some(8),
        _ => None,
    }
}

impl DeviceConv {
    /// Upload `conv` followed by `activation`, in the layouts of every kernel form that can
    /// run it: mma.sync with input channels in multiples of 16 and output channels in
    /// multiples of 8; wgmma up to 64 channels in and out. Refused when neither can.
    pub fn upload(
        stream: &Arc<CudaStream>,
        conv: &Conv3x3,
        activation: &Activation,
    ) -> Result<Self, GpuError> {
        let (cin, cout) = (conv.in_channels, conv.out_channels);
        let (slope, activated) = negative_slopes(conv, activation)?;
        let up = |what: &'static str| driver_error(what);
        let mma = match cin % 16 == 0 && cout % 8 == 0 {
            true => Some(MmaWeights {
                weight: stream
                    .clone_htod(&ohwi(conv))
                    .map_err(up("uploading a layer's weights"))?,
                bias: stream
                    .clone_htod(&conv.bias)
                    .map_err(up("uploading a bias"))?,
                slope: stream.clone_htod(&slope).map_err(up("uploading slopes"))?,
            }),
            false => None,
        };
        let wgmma = match (wgmma_chunks(cin), cout <= WGMMA_CHANNELS) {
            (Some(chunks), true) => {
                let mut bias = conv.bias.clone();
                bias.resize(WGMMA_CHANNELS, 0.0);
                let mut slope = slope.clone();
                slope.resize(WGMMA_CHANNELS, 1.0);
                Some(WgmmaWeights {
                    weight: stream
                        .clone_htod(&wgmma_tiles(conv, chunks))
                        .map_err(up("uploading a layer's weights"))?,
                    bias: stream.clone_htod(&bias).map_err(up("uploading a bias"))?,
                    slope: stream.clone_htod(&slope).map_err(up("uploading slopes"))?,
                    chunks,
                })
            }
            _ => None,
        };
        if mma.is_none() && wgmma.is_none() {
            return Err(GpuError(format!(
                "{}: no convolution kernel takes {cin} input and {cout} output channels (mma.sync: multiples of 16 in and 8 out; wgmma: up to 64 each)",
                conv.node
            )));
        }
        Ok(Self {
            mma,
            wgmma,
            in_channels: cin,
            out_channels: cout,
            activated,
        })
    }

    /// Input channels.
    pub fn in_channels(&self) -> usize {
        self.in_channels
    }

    /// Output channels.
    pub fn out_channels(&self) -> usize {
        self.out_channels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(cin: usize, cout: usize) -> Conv3x3 {
        Conv3x3 {
            out_channels: cout,
            in_channels: cin,
            weight: (0..cout * cin * 9).map(|i| i as f32).collect(),
            bias: vec![0.0; cout],
            pad: 1,
            node: "t".into(),
        }
    }

    #[test]
    fn the_wgmma_layout_puts_each_weight_in_its_core_matrix() {
        let c = conv(64, 64);
        let tiles = wgmma_tiles(&c, 8);
        // out 10, in 19, tap 4 (ky 1, kx 1): chunk 2, element 3 of output row 10.
        let want = f16::from_f32(((10 * 64 + 19) * 9 + 4) as f32).to_bits();
        assert_eq!(tiles[((4 * 8 + 2) * 64 + 10) * 8 + 3], want);
        let mut sorted = tiles.clone();
        sorted.sort_unstable();
        sorted.dedup();
        // Every weight appears (small integers are exact in half precision up to 2048;
        // past that some round together, so count only the exact ones).
        assert!(sorted.len() >= 2048);
    }

    #[test]
    fn narrow_layers_are_padded_with_zeros_in_the_wgmma_layout() {
        let c = conv(3, 48);
        assert_eq!(wgmma_chunks(3), Some(2));
        let tiles = wgmma_tiles(&c, 2);
        assert_eq!(tiles.len(), 9 * 2 * 64 * 8);
        let want = f16::from_f32(((47 * 3 + 2) * 9 + 8) as f32).to_bits();
        assert_eq!(tiles[((8 * 2) * 64 + 47) * 8 + 2], want);
        // Input channel 3 and output channel 48 do not exist: zeros.
        assert_eq!(tiles[((8 * 2) * 64 + 47) * 8 + 3], 0);
        assert_eq!(tiles[((8 * 2) * 64 + 48) * 8 + 2], 0);
        assert_eq!(wgmma_chunks(65), None);
    }

    #[test]
    fn the_ohwi_layout_moves_input_channels_innermost() {
        let c = conv(16, 8);
        let w = ohwi(&c);
        let want = f16::from_f32(((3 * 16 + 5) * 9 + 7) as f32).to_bits();
        assert_eq!(w[(3 * 9 + 7) * 16 + 5], want);
    }
}
