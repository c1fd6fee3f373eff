//! One convolution layer's parameters on the device, in the layouts the kernels read.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::f16;

use super::{GpuError, driver_error};
use crate::network::{Activation, Conv3x3};

/// Channels in and out of the layers the wgmma kernel takes (conv3x3_wgmma.cu).
pub(super) const WGMMA_CHANNELS: usize = 64;

/// One layer's weights on the device: `[out][ky][kx][in]` half for the mma.sync kernels,
/// the wgmma kernel's `[tap][in / 8][out][8]` half where the layer has 64 channels in and
/// out, and bias and negative slopes in f32.
pub struct DeviceConv {
    pub(super) weight: CudaSlice<u16>,
    pub(super) wgmma_weight: Option<CudaSlice<u16>>,
    pub(super) bias: CudaSlice<f32>,
    pub(super) slope: CudaSlice<f32>,
    pub(super) in_channels: usize,
    pub(super) out_channels: usize,
    pub(super) activated: bool,
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

/// `[out][in][ky][kx]` -> `[tap][in / 8][out][8]`, half bits: each tap's 64 x 64 matrix as
/// wgmma's core matrices (8 output channels x 8 input channels, 16-byte rows), input
/// chunks 1024 bytes apart (see conv3x3_wgmma.cu).
fn wgmma_tiles(conv: &Conv3x3) -> Vec<u16> {
    let c = WGMMA_CHANNELS;
    let mut out = vec![0u16; 9 * c * c];
    for o in 0..c {
        for i in 0..c {
            for tap in 0..9 {
                let v = conv.weight[(o * c + i) * 9 + tap];
                out[((tap * 8 + i / 8) * c + o) * 8 + i % 8] = f16::from_f32(v).to_bits();
            }
        }
    }
    out
}

impl DeviceConv {
    /// Upload `conv` (padding 1) followed by `activation`. The kernels need input channels
    /// in multiples of 16 and output channels in multiples of 8.
    pub fn upload(
        stream: &Arc<CudaStream>,
        conv: &Conv3x3,
        activation: &Activation,
    ) -> Result<Self, GpuError> {
        let (cin, cout) = (conv.in_channels, conv.out_channels);
        if conv.pad != 1 || cin % 16 != 0 || cout % 8 != 0 {
            return Err(GpuError(format!(
                "{}: the tensor-core convolution takes padding 1, input channels in multiples of 16 and output channels in multiples of 8 (this one: padding {}, {cin} in, {cout} out)",
                conv.node, conv.pad
            )));
        }
        let (slope, activated) = match activation {
            Activation::Identity => (vec![1.0; cout], false),
            Activation::PRelu(s) if s.len() == cout => (s.clone(), true),
            Activation::PRelu(s) => {
                return Err(GpuError(format!(
                    "{}: {} PReLU slopes for {cout} channels",
                    conv.node,
                    s.len()
                )));
            }
            Activation::LeakyRelu(a) => (vec![*a; cout], true),
        };
        let wgmma_weight = match cin == WGMMA_CHANNELS && cout == WGMMA_CHANNELS {
            true => Some(
                stream
                    .clone_htod(&wgmma_tiles(conv))
                    .map_err(driver_error("uploading a layer's weights"))?,
            ),
            false => None,
        };
        Ok(Self {
            weight: stream
                .clone_htod(&ohwi(conv))
                .map_err(driver_error("uploading a layer's weights"))?,
            wgmma_weight,
            bias: stream
                .clone_htod(&conv.bias)
                .map_err(driver_error("uploading a bias"))?,
            slope: stream
                .clone_htod(&slope)
                .map_err(driver_error("uploading slopes"))?,
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
        let tiles = wgmma_tiles(&c);
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
    fn the_ohwi_layout_moves_input_channels_innermost() {
        let c = conv(16, 8);
        let w = ohwi(&c);
        let want = f16::from_f32(((3 * 16 + 5) * 9 + 7) as f32).to_bits();
        assert_eq!(w[(3 * 9 + 7) * 16 + 5], want);
    }
}
