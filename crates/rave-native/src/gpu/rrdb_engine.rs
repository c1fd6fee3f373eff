//! RRDBNet on the GPU: every convolution on the streamed wgmma kernels over NHWC half maps,
//! from planar f32 RGB to planar f32 RGB, every launch on one stream.
//!
//! Each dense block works in one concatenation map of `features + 4 * growth` channels a
//! pixel: its input in the first `features`, and each of its first four convolutions reads
//! the channels before its own slice and writes its slice (the concatenation is never
//! copied). The fifth writes `x + 0.2 * conv` into the next block's map (three maps in
//! turn); the third dense block of an RRDB also adds the RRDB's input, `x + 0.2 * (y + 0.2 *
//! conv)`, in place over the channels it was read from. The trunk's closing convolution
//! adds itself to `conv_first`'s output in place; the upsampling convolutions read their
//! input through nearest x2 on the fly; `conv_last` writes the planar output.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut};

use super::input_pack::{InputPacker, hopper_multiprocessors};
use super::streamed::{Residual, StreamedKernels, StreamedSource, StreamedTarget};
use super::streamed_conv::{KSTEP_CHANNELS, StreamedConv, streamed_refusal};
use super::wgmma::PADDED_INPUT_CHANNELS;
use super::{GpuError, driver_error};
use crate::network::{Activation, Conv3x3, RrdbNet};

/// Most features and dense growth the kernels take (wgmma's M).
const MOST_CHANNELS: usize = 64;

/// Why `net` cannot run on these kernels, if it cannot.
pub fn unsupported(net: &RrdbNet) -> Option<String> {
    let (nf, gc) = (net.features(), net.growth());
    for (what, n) in [("features", nf), ("dense growth", gc)] {
        if n == 0 || n % KSTEP_CHANNELS != 0 || n > MOST_CHANNELS {
            return Some(format!(
                "{n} {what}: the native kernels take multiples of {KSTEP_CHANNELS} up to {MOST_CHANNELS}"
            ));
        }
    }
    if net.conv_first.in_channels > PADDED_INPUT_CHANNELS {
        return Some(format!(
            "{} input channels (the native engine takes RGB)",
            net.conv_first.in_channels
        ));
    }
    let mut convs: Vec<(&Conv3x3, usize, usize)> = vec![(&net.conv_first, 3, nf)];
    for block in &net.blocks {
        for dense in &block.dense {
            for (k, conv) in dense.convs.iter().enumerate() {
                let out = if k == 4 { nf } else { gc };
                convs.push((conv, nf + k * gc, out));
            }
        }
    }
    convs.push((&net.trunk_conv, nf, nf));
    convs.extend(net.upsample.iter().map(|c| (c, nf, nf)));
    convs.push((&net.conv_hr, nf, nf));
    convs.push((&net.conv_last, nf, 3));
    for (conv, cin, cout) in convs {
        if (conv.in_channels, conv.out_channels) != (cin, cout) {
            return Some(format!(
                "{}: {} -> {} channels where this RRDBNet has {cin} -> {cout}",
                conv.node, conv.in_channels, conv.out_channels
            ));
        }
        if let Some(why) = streamed_refusal(conv) {
            return Some(why);
        }
    }
    None
}

/// An RRDBNet loaded for one frame size.
pub struct RrdbEngine {
    stream: Arc<CudaStream>,
    kernels: StreamedKernels,
    input: InputPacker,
    first: StreamedConv,
    blocks: Vec<[[StreamedConv; 5]; 3]>,
    trunk: StreamedConv,
    upsample: Vec<StreamedConv>,
    hr: StreamedConv,
    last: StreamedConv,
    residual_scale: f32,
    height: usize,
    width: usize,
    features: usize,
    growth: usize,
    feat: CudaSlice<u16>,
    dense: [CudaSlice<u16>; 3],
    upsampled: Vec<CudaSlice<u16>>,
    hr_map: CudaSlice<u16>,
}

impl RrdbEngine {
    /// Load `net` for frames of `height x width` on `stream` (compute capability 9.0).
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: Arc<CudaStream>,
        net: &RrdbNet,
        (height, width): (usize, usize),
    ) -> Result<Self, GpuError> {
        if let Some(why) = unsupported(net) {
            return Err(GpuError(why));
        }
        let kernels = StreamedKernels::load(ctx, hopper_multiprocessors(ctx)?)?;
        let input = InputPacker::new(ctx, &stream, (height, width))?;
        let lrelu = Activation::LeakyRelu(net.alpha);
        let up = |c: &Conv3x3, a: &Activation| StreamedConv::upload(&stream, c, a);
        let blocks = net
            .blocks
            .iter()
            .map(|b| {
                let dense = |d: usize| -> Result<[StreamedConv; 5], GpuError> {
                    let c = &b.dense[d].convs;
                    Ok([
                        up(&c[0], &lrelu)?,
                        up(&c[1], &lrelu)?,
                        up(&c[2], &lrelu)?,
                        up(&c[3], &lrelu)?,
                        up(&c[4], &Activation::Identity)?,
                    ])
                };
                Ok([dense(0)?, dense(1)?, dense(2)?])
            })
            .collect::<Result<Vec<_>, GpuError>>()?;
        let (nf, gc) = (net.features(), net.growth());
        let concat = nf + 4 * gc;
        let pixels = height * width;
        let alloc = |n: usize| {
            stream
                .alloc_zeros::<u16>(n.max(1))
                .map_err(driver_error("allocating a feature map"))
        };
        let upsampled = (0..net.upsample.len())
            .map(|i| alloc((pixels << (2 * (i + 1))) * nf))
            .collect::<Result<Vec<_>, _>>()?;
        let scale = 1usize << net.upsample.len();
        Ok(Self {
            first: up(&net.conv_first, &Activation::Identity)?,
            blocks,
            trunk: up(&net.trunk_conv, &Activation::Identity)?,
            upsample: net
                .upsample
                .iter()
                .map(|c| up(c, &lrelu))
                .collect::<Result<Vec<_>, _>>()?,
            hr: up(&net.conv_hr, &lrelu)?,
            last: up(&net.conv_last, &Activation::Identity)?,
            residual_scale: net.residual_scale,
            feat: alloc(pixels * nf)?,
            dense: [
                alloc(pixels * concat)?,
                alloc(pixels * concat)?,
                alloc(pixels * concat)?,
            ],
            upsampled,
            hr_map: alloc(pixels * scale * scale * nf)?,
            stream,
            kernels,
            input,
            height,
            width,
            features: nf,
            growth: gc,
        })
    }

    /// Stage sources of the output's size by tensor copies (the default) or by cp.async
    /// (see [`StreamedKernels::set_tensor_copies`]): for comparisons.
    pub fn set_tensor_copies(&mut self, on: bool) {
        self.kernels.set_tensor_copies(on);
    }

    /// Output size / input size.
    pub fn scale(&self) -> usize {
        1 << self.upsample.len()
    }

    /// Queue the network over `input` (planar f32 `[3][h][w]`) into `output` (planar f32
    /// `[3][h * scale][w * scale]`) on the engine's stream.
    pub fn run<'v>(
        &mut self,
        input: &CudaView<'v, f32>,
        output: &mut CudaViewMut<'v, f32>,
    ) -> Result<(), GpuError> {
        let (h, w) = (self.height, self.width);
        let s = self.scale();
        let pixels = h * w;
        if input.len() < 3 * pixels || output.len() < 3 * pixels * s * s {
            return Err(GpuError(format!(
                "network buffers too small for {w}x{h} at x{s}: input {} of {}, output {} of {}",
                input.len(),
                3 * pixels,
                output.len(),
                3 * pixels * s * s
            )));
        }
        self.input.pack(&self.stream, input)?;

        let (nf, gc) = (self.features, self.growth);
        let concat = nf + 4 * gc;
        let k = &self.kernels;
        let stream = &self.stream;
        let body = (h, w);
        let none = Residual::default();
        let packed = StreamedSource::plain(&self.input.packed, PADDED_INPUT_CHANNELS);
        let feat_target = StreamedTarget::Nhwc {
            map: &mut self.feat,
            stride: nf,
            offset: 0,
        };
        k.run(stream, &self.first, packed, feat_target, none, body)?;
        // conv_first runs a second time into the first dense map rather than copying its
        // output there: the trunk's residual needs it kept apart (the RRDBs overwrite the
        // dense maps' leading channels), and a 16 -> 64 layer costs less than a copy pass.
        let [a, b, c] = &mut self.dense;
        let target = StreamedTarget::Nhwc {
            map: &mut *a,
            stride: concat,
            offset: 0,
        };
        k.run(
            stream,
            &self.first,
            StreamedSource::plain(&self.input.packed, PADDED_INPUT_CHANNELS),
            target,
            none,
            body,
        )?;
        let rs = self.residual_scale;
        for block in &self.blocks {
            for (d, dense) in block.iter().enumerate() {
                let inner = Residual {
                    source: Some(rs),
                    target: None,
                };
                // The RRDB's end writes over its input, in the first map.
                let outer = Residual {
                    source: Some(rs),
                    target: Some(rs),
                };
                let (cur, next, residual) = match d {
                    0 => (&mut *a, &mut *b, inner),
                    1 => (&mut *b, &mut *c, inner),
                    _ => (&mut *c, &mut *a, outer),
                };
                for (i, conv) in dense[..4].iter().enumerate() {
                    let target = StreamedTarget::Nhwc {
                        map: &mut *cur,
                        stride: concat,
                        offset: nf + i * gc,
                    };
                    k.run(
                        stream,
                        conv,
                        StreamedSource::TargetPrefix,
                        target,
                        none,
                        body,
                    )?;
                }
                let target = StreamedTarget::Nhwc {
                    map: next,
                    stride: concat,
                    offset: 0,
                };
                k.run(
                    stream,
                    &dense[4],
                    StreamedSource::plain(cur, concat),
                    target,
                    residual,
                    body,
                )?;
            }
        }
        let feat_target = StreamedTarget::Nhwc {
            map: &mut self.feat,
            stride: nf,
            offset: 0,
        };
        let trunk_residual = Residual {
            source: None,
            target: Some(1.0),
        };
        k.run(
            stream,
            &self.trunk,
            StreamedSource::plain(a, concat),
            feat_target,
            trunk_residual,
            body,
        )?;
        let mut size = body;
        let mut previous = &self.feat;
        for (conv, out) in self.upsample.iter().zip(self.upsampled.iter_mut()) {
            size = (size.0 * 2, size.1 * 2);
            let source = StreamedSource::Map {
                map: previous,
                stride: nf,
                upsampled: true,
            };
            let target = StreamedTarget::Nhwc {
                map: out,
                stride: nf,
                offset: 0,
            };
            k.run(stream, conv, source, target, none, size)?;
            previous = out;
        }
        let target = StreamedTarget::Nhwc {
            map: &mut self.hr_map,
            stride: nf,
            offset: 0,
        };
        k.run(
            stream,
            &self.hr,
            StreamedSource::plain(previous, nf),
            target,
            none,
            size,
        )?;
        k.run(
            stream,
            &self.last,
            StreamedSource::plain(&self.hr_map, nf),
            StreamedTarget::Planar(output),
            none,
            size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{DenseBlock, Rrdb};

    fn conv(cin: usize, cout: usize, node: &str) -> Conv3x3 {
        Conv3x3 {
            out_channels: cout,
            in_channels: cin,
            weight: vec![0.0; cin * cout * 9],
            bias: vec![0.0; cout],
            pad: 1,
            node: node.into(),
        }
    }

    /// An RRDBNet of `nf` features and `gc` growth, `blocks` RRDBs, x4.
    fn net(nf: usize, gc: usize, blocks: usize) -> RrdbNet {
        let dense = || DenseBlock {
            convs: [0, 1, 2, 3, 4].map(|k| conv(nf + k * gc, if k == 4 { nf } else { gc }, "d")),
        };
        RrdbNet {
            conv_first: conv(3, nf, "first"),
            blocks: (0..blocks)
                .map(|_| Rrdb {
                    dense: [dense(), dense(), dense()],
                })
                .collect(),
            trunk_conv: conv(nf, nf, "trunk"),
            upsample: vec![conv(nf, nf, "up1"), conv(nf, nf, "up2")],
            conv_hr: conv(nf, nf, "hr"),
            conv_last: conv(nf, 3, "last"),
            alpha: 0.2,
            residual_scale: 0.2,
        }
    }

    #[test]
    fn x4plus_widths_are_taken_and_others_refused_saying_why() {
        assert_eq!(unsupported(&net(64, 32, 2)), None);
        assert_eq!(unsupported(&net(32, 16, 1)), None);
        let why = unsupported(&net(8, 4, 1)).expect("8 features");
        assert!(
            why.contains("8 features") && why.contains("multiples of 16"),
            "{why}"
        );
        let why = unsupported(&net(64, 24, 1)).expect("growth 24");
        assert!(why.contains("24 dense growth"), "{why}");
        let why = unsupported(&net(128, 32, 1)).expect("128 features");
        assert!(why.contains("up to 64"), "{why}");
        // A layer whose channels do not follow the architecture.
        let mut odd = net(64, 32, 1);
        odd.conv_hr = conv(64, 48, "hr");
        let why = unsupported(&odd).expect("conv_hr 64 -> 48");
        assert!(why.contains("hr: 64 -> 48"), "{why}");
        // Valid convolutions only.
        let mut valid = net(64, 32, 1);
        valid.trunk_conv.pad = 0;
        assert!(unsupported(&valid).expect("pad 0").contains("padding 0"));
    }
}
