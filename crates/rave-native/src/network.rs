//! What a recognised network is: its architecture, layers with their weights (f32, whatever
//! the file stored), activations, channels, scale and tail. The GPU kernels and the CPU
//! reference both read this, never the ONNX graph.

use std::fmt;

use crate::graph::Storage;

/// A 3x3 convolution, stride 1, dilation 1, one group.
#[derive(Debug, Clone, PartialEq)]
pub struct Conv3x3 {
    /// Output channels.
    pub out_channels: usize,
    /// Input channels.
    pub in_channels: usize,
    /// Weights in ONNX order `[out][in][ky][kx]`, `out * in * 9` values.
    pub weight: Vec<f32>,
    /// One bias per output channel (zeros where the file has none).
    pub bias: Vec<f32>,
    /// Zero padding on every side (1 keeps the size; 0 is a "valid" convolution).
    pub pad: usize,
    /// The ONNX node it came from, for messages.
    pub node: String,
}

/// What follows a convolution before its output is used.
#[derive(Debug, Clone, PartialEq)]
pub enum Activation {
    /// Nothing.
    Identity,
    /// PReLU with one slope per channel.
    PRelu(Vec<f32>),
    /// LeakyReLU with this negative slope.
    LeakyRelu(f32),
}

/// A convolution and its activation.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// The convolution.
    pub conv: Conv3x3,
    /// Its activation.
    pub activation: Activation,
}

/// A recognised network.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// The architecture and its weights.
    pub architecture: Architecture,
    /// Output size / input size.
    pub scale: u32,
    /// Element type of the model's tensors in the file (weights are always given as f32).
    pub storage: Storage,
}

/// The architectures RAVE recognises.
#[derive(Debug, Clone, PartialEq)]
pub enum Architecture {
    /// SRVGGNetCompact (Real-ESRGAN animevideov3 family).
    Compact(CompactNet),
    /// RRDBNet (ESRGAN, RealESRGAN_x4plus, x4plus_anime_6B).
    Rrdb(RrdbNet),
}

/// SRVGGNetCompact: `body` (conv + PReLU each), `last` conv to `3 * shuffle²` channels,
/// pixel shuffle by `shuffle`, plus the input upsampled by nearest `shuffle`; then `tail`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactNet {
    /// Conv 3x3 + PReLU layers, the first reading the 3-channel input.
    pub body: Vec<Layer>,
    /// The last convolution (no activation).
    pub last: Conv3x3,
    /// DepthToSpace (CRD, PyTorch's pixel shuffle) block size.
    pub shuffle: u32,
    /// What follows the shuffle.
    pub tail: CompactTail,
}

/// The end of an SRVGGNetCompact graph.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactTail {
    /// `pixel_shuffle(last) + nearest(input)`: the output, scale = shuffle.
    Residual,
    /// The residual sum resized by a bicubic Resize (half_pixel, a = -0.75, edges clamped)
    /// by `factor`: ncnn's animevideov3 x3 is the x4 network then a 0.75 resize.
    CubicResize {
        /// The resize factor (< 1).
        factor: f32,
    },
    /// RAVE's folded x2 tail (tools/fold_tail.py): the x4 network's residual sum and cubic
    /// halving, rewritten as one valid 3x3 convolution over the `last` output padded with
    /// channel-remapped edge rows and columns, concatenated with the edge-padded input,
    /// then DepthToSpace(`block`, CRD). `shuffle` is then not applied.
    Folded(FoldedTail),
}

/// The folded tail's constants.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedTail {
    /// Channels of `last`'s first row that make the padded row above it.
    pub top: Vec<usize>,
    /// Channels of the last row that make the row below it.
    pub bottom: Vec<usize>,
    /// Channels of the (row-padded) first column that make the column left of it.
    pub left: Vec<usize>,
    /// Channels of the last column that make the column right of it.
    pub right: Vec<usize>,
    /// The valid (pad 0) convolution over `[padded last, edge-padded input]`.
    pub conv: Conv3x3,
    /// DepthToSpace block size of its output.
    pub block: u32,
}

/// RRDBNet: `conv_first`, `blocks` (the trunk), `trunk_conv` added to `conv_first`'s output,
/// then per `upsample` a nearest x2 and conv + LeakyReLU, `conv_hr` + LeakyReLU, `conv_last`.
#[derive(Debug, Clone, PartialEq)]
pub struct RrdbNet {
    /// The first convolution (3 -> features), no activation.
    pub conv_first: Conv3x3,
    /// Residual-in-residual dense blocks.
    pub blocks: Vec<Rrdb>,
    /// The trunk's closing convolution, no activation.
    pub trunk_conv: Conv3x3,
    /// Convolutions after each nearest x2 upsample, each followed by LeakyReLU.
    pub upsample: Vec<Conv3x3>,
    /// The high-resolution convolution, followed by LeakyReLU.
    pub conv_hr: Conv3x3,
    /// The output convolution (features -> 3), no activation.
    pub conv_last: Conv3x3,
    /// The LeakyReLU slope used throughout (0.2).
    pub alpha: f32,
    /// The residual scaling of dense blocks and RRDBs (0.2).
    pub residual_scale: f32,
}

impl RrdbNet {
    /// Channels of the trunk (conv_first's outputs).
    pub fn features(&self) -> usize {
        self.conv_first.out_channels
    }

    /// Channels each dense convolution adds to its block's concatenation (0 without blocks).
    pub fn growth(&self) -> usize {
        self.blocks
            .first()
            .map_or(0, |b| b.dense[0].convs[0].out_channels)
    }
}

/// One RRDB: three dense blocks, `x + residual_scale * rdb3(rdb2(rdb1(x)))`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rrdb {
    /// The three dense blocks.
    pub dense: [DenseBlock; 3],
}

/// One residual dense block: conv k reads `[x, x1 .. x(k-1)]` concatenated; convs 1-4 are
/// followed by LeakyReLU; the block returns `x + residual_scale * x5`.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseBlock {
    /// The five convolutions.
    pub convs: [Conv3x3; 5],
}

impl Architecture {
    /// The architecture's name: "SRVGGNetCompact" or "RRDBNet".
    pub fn name(&self) -> &'static str {
        match self {
            Architecture::Compact(_) => "SRVGGNetCompact",
            Architecture::Rrdb(_) => "RRDBNet",
        }
    }
}

impl fmt::Display for Network {
    /// "SRVGGNetCompact x2 (64 features, 16 body convs, folded x2 tail, fp16)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x{} (", self.architecture.name(), self.scale)?;
        match &self.architecture {
            Architecture::Compact(c) => {
                let feat = c.body.first().map_or(0, |l| l.conv.out_channels);
                let tail = match &c.tail {
                    CompactTail::Residual => "residual tail".to_string(),
                    CompactTail::CubicResize { factor } => {
                        format!("x{} then cubic x{factor} tail", c.shuffle)
                    }
                    CompactTail::Folded(t) => format!("folded x{} tail", t.block),
                };
                write!(
                    f,
                    "{feat} features, {} body convs, {tail}",
                    c.body.len().saturating_sub(1)
                )?;
            }
            Architecture::Rrdb(r) => write!(
                f,
                "{} features, {} RRDB blocks, {} dense growth",
                r.features(),
                r.blocks.len(),
                r.growth()
            )?,
        }
        let storage = match self.storage {
            Storage::F32 => "fp32",
            Storage::F16 => "fp16",
        };
        write!(f, ", {storage})")
    }
}
