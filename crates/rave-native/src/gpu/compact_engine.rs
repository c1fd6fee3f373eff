//! SRVGGNetCompact on the GPU: the whole network as a chain of wgmma convolutions over NHWC
//! half maps, from planar f32 RGB to planar f32 RGB, every launch on one stream.
//!
//! The input is packed once to 16 half channels a pixel (`layout.cu`); the first layer
//! reads that, the body layers ping-pong between two 64-channel maps, and the network's
//! end is fused into its last convolution: pixel shuffle plus the nearest-upsampled input
//! (the residual tail), or, for the folded x2 tail, a 48-channel map that the tail
//! convolution reads in place together with the packed input, writing the depth-to-space
//! result.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut};

use super::device_conv::{DeviceConv, WGMMA_CHANNELS};
use super::input_pack::{InputPacker, hopper_multiprocessors};
use super::wgmma::{WgmmaForm, WgmmaKernels, WgmmaSource, WgmmaTarget};
use super::{GpuError, driver_error};
use crate::network::{Activation, CompactNet, CompactTail};

/// How the network ends.
enum Tail {
    /// Pixel shuffle by `block` plus the nearest-upsampled input, fused into `last`.
    Residual { block: usize },
    /// `last` to a 48-channel map, then the folded tail's valid convolution over it and the
    /// input with remapped edges, depth-to-space by `block`.
    Folded(Box<FoldedTail>),
}

/// The folded tail's convolution and edge tables. The 48-channel map it reads is written
/// into the body's spare 64-channel map (no buffer of its own).
struct FoldedTail {
    conv: DeviceConv,
    remap: CudaSlice<i32>,
    block: usize,
}

/// An SRVGGNetCompact loaded for one frame size.
pub struct CompactEngine {
    stream: Arc<CudaStream>,
    kernels: WgmmaKernels,
    input: InputPacker,
    body: Vec<DeviceConv>,
    last: DeviceConv,
    tail: Tail,
    height: usize,
    width: usize,
    scale: usize,
    maps: [CudaSlice<u16>; 2],
}

/// Why `net` cannot run on these kernels, if it cannot.
pub fn unsupported(net: &CompactNet) -> Option<String> {
    let features = net.last.in_channels;
    if features != WGMMA_CHANNELS {
        return Some(format!("{features} features: the native kernels take 64"));
    }
    if let Some(l) = net
        .body
        .iter()
        .skip(1)
        .find(|l| l.conv.in_channels != WGMMA_CHANNELS || l.conv.out_channels != WGMMA_CHANNELS)
    {
        return Some(format!(
            "{}: a body layer that is not 64 -> 64",
            l.conv.node
        ));
    }
    match &net.tail {
        CompactTail::CubicResize { .. } => {
            Some("the x4-then-cubic tail (x3 models) is not in the native engine yet".into())
        }
        CompactTail::Folded(t) if t.conv.in_channels != 48 + 3 || t.conv.out_channels != 12 => {
            Some(format!(
                "a folded tail of {} -> {} channels (the kernels take 51 -> 12)",
                t.conv.in_channels, t.conv.out_channels
            ))
        }
        _ => None,
    }
}

/// The folded tail's edge tables as the kernel reads them: top, bottom, left, right, 64
/// entries each, identity past the last layer's channels.
fn remap_tables(tables: [&[usize]; 4]) -> Result<Vec<i32>, GpuError> {
    let mut out = Vec::with_capacity(4 * WGMMA_CHANNELS);
    for table in tables {
        for c in 0..WGMMA_CHANNELS {
            let v = match table.get(c) {
                Some(&src) if src < table.len() => src,
                Some(&src) => {
                    return Err(GpuError(format!(
                        "the folded tail's edge table names channel {src} of {}",
                        table.len()
                    )));
                }
                None => c,
            };
            out.push(v as i32);
        }
    }
    Ok(out)
}

impl CompactEngine {
    /// Load `net` for frames of `height x width` on `stream` (compute capability 9.0).
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: Arc<CudaStream>,
        net: &CompactNet,
        (height, width): (usize, usize),
    ) -> Result<Self, GpuError> {
        if let Some(why) = unsupported(net) {
            return Err(GpuError(why));
        }
        let kernels = WgmmaKernels::load(ctx, hopper_multiprocessors(ctx)?)?;
        let input = InputPacker::new(ctx, &stream, (height, width))?;
        let body = net
            .body
            .iter()
            .map(|l| DeviceConv::upload(&stream, &l.conv, &l.activation))
            .collect::<Result<Vec<_>, _>>()?;
        let last = DeviceConv::upload(&stream, &net.last, &Activation::Identity)?;
        let pixels = height * width;
        let alloc = |n: usize| {
            stream
                .alloc_zeros::<u16>(n.max(1))
                .map_err(driver_error("allocating a feature map"))
        };
        let (tail, scale) = match &net.tail {
            CompactTail::Residual => {
                let block = net.shuffle as usize;
                (Tail::Residual { block }, block)
            }
            CompactTail::Folded(t) => {
                let remap = remap_tables([&t.top, &t.bottom, &t.left, &t.right])?;
                let block = t.block as usize;
                let tail = Tail::Folded(Box::new(FoldedTail {
                    conv: DeviceConv::upload(&stream, &t.conv, &Activation::Identity)?,
                    remap: stream
                        .clone_htod(&remap)
                        .map_err(driver_error("uploading the edge tables"))?,
                    block,
                }));
                (tail, block)
            }
            CompactTail::CubicResize { .. } => unreachable!("refused by unsupported()"),
        };
        Ok(Self {
            maps: [
                alloc(pixels * WGMMA_CHANNELS)?,
                alloc(pixels * WGMMA_CHANNELS)?,
            ],
            stream,
            kernels,
            input,
            body,
            last,
            tail,
            height,
            width,
            scale,
        })
    }

    /// Output size / input size.
    pub fn scale(&self) -> usize {
        self.scale
    }

    /// Queue the network over `input` (planar f32 `[3][h][w]`) into `output` (planar f32
    /// `[3][h * scale][w * scale]`) on the engine's stream.
    pub fn run<'v>(
        &mut self,
        input: &CudaView<'v, f32>,
        output: &mut CudaViewMut<'v, f32>,
    ) -> Result<(), GpuError> {
        let (h, w) = (self.height, self.width);
        let pixels = h * w;
        if input.len() < 3 * pixels || output.len() < 3 * pixels * self.scale * self.scale {
            return Err(GpuError(format!(
                "network buffers too small for {w}x{h} at x{}: input {} of {}, output {} of {}",
                self.scale,
                input.len(),
                3 * pixels,
                output.len(),
                3 * pixels * self.scale * self.scale
            )));
        }
        self.input.pack(&self.stream, input)?;

        let shape = (h, w);
        let [a, b] = &mut self.maps;
        let (mut current, mut next) = (a, b);
        for (i, layer) in self.body.iter().enumerate() {
            let source = match i {
                0 => WgmmaSource::Plain(&self.input.packed),
                _ => WgmmaSource::Plain(current),
            };
            let target = WgmmaTarget::Nhwc {
                out: next,
                channels: WGMMA_CHANNELS,
            };
            self.kernels.run(
                &self.stream,
                layer,
                source,
                target,
                shape,
                WgmmaForm::PingPong,
            )?;
            std::mem::swap(&mut current, &mut next);
        }
        match &mut self.tail {
            Tail::Residual { block } => {
                let target = WgmmaTarget::DepthToSpace {
                    out: output,
                    block: *block,
                    residual: Some(input),
                };
                self.kernels.run(
                    &self.stream,
                    &self.last,
                    WgmmaSource::Plain(current),
                    target,
                    shape,
                    WgmmaForm::PingPong,
                )
            }
            Tail::Folded(folded) => {
                let FoldedTail { conv, remap, block } = &**folded;
                let last_map = next;
                let target = WgmmaTarget::Nhwc {
                    out: last_map,
                    channels: 48,
                };
                self.kernels.run(
                    &self.stream,
                    &self.last,
                    WgmmaSource::Plain(current),
                    target,
                    shape,
                    WgmmaForm::PingPong,
                )?;
                let source = WgmmaSource::FoldedTail {
                    last: &*last_map,
                    input: &self.input.packed,
                    remap,
                };
                let target = WgmmaTarget::DepthToSpace {
                    out: output,
                    block: *block,
                    residual: None,
                };
                self.kernels.run(
                    &self.stream,
                    conv,
                    source,
                    target,
                    shape,
                    WgmmaForm::PingPong,
                )
            }
        }
    }
}
