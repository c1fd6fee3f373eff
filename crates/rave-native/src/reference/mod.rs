//! The plain CPU reference of the recognised networks (f32, NCHW, straightforward loops): the
//! ground truth the GPU kernels are checked against, itself checked against ONNX Runtime.

mod compact;
pub mod ops;
mod rrdb;

use crate::network::{Architecture, Network};

/// A `channels x height x width` f32 tensor, planar (NCHW with batch 1).
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMap {
    /// Channels.
    pub channels: usize,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// `channels * height * width` values, channel by channel, row by row.
    pub data: Vec<f32>,
}

impl FeatureMap {
    /// A map of zeros.
    pub fn zeros(channels: usize, height: usize, width: usize) -> Self {
        Self {
            channels,
            height,
            width,
            data: vec![0.0; channels * height * width],
        }
    }

    /// Wrap planar `data`; None when its length is not `channels * height * width`.
    pub fn from_planar(
        channels: usize,
        height: usize,
        width: usize,
        data: Vec<f32>,
    ) -> Option<Self> {
        (data.len() == channels * height * width).then_some(Self {
            channels,
            height,
            width,
            data,
        })
    }

    /// Index of `(c, y, x)` in `data`.
    pub fn index(&self, c: usize, y: usize, x: usize) -> usize {
        (c * self.height + y) * self.width + x
    }

    /// The value at `(c, y, x)`.
    pub fn at(&self, c: usize, y: usize, x: usize) -> f32 {
        self.data[self.index(c, y, x)]
    }

    /// Channel `c`'s plane.
    pub fn plane(&self, c: usize) -> &[f32] {
        let n = self.height * self.width;
        &self.data[c * n..(c + 1) * n]
    }
}

/// Run `net` on a 3-channel image; the result is `net.scale` times larger.
pub fn run(net: &Network, input: &FeatureMap) -> FeatureMap {
    assert_eq!(input.channels, 3, "the networks take RGB");
    match &net.architecture {
        Architecture::Compact(c) => compact::run(c, input),
        Architecture::Rrdb(r) => rrdb::run(r, input),
    }
}
