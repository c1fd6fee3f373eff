//! The Hopper (wgmma) convolution kernels of `conv3x3_wgmma.cu`: what a launch reads
//! ([`WgmmaSource`]) and writes ([`WgmmaTarget`]), checked against the layer and the image
//! before anything is queued.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig,
    PushKernelArg,
};

use super::device_conv::{DeviceConv, WGMMA_CHANNELS};
use super::{GpuError, driver_error, load_module_functions};

const SOURCE: &str = concat!(
    include_str!("wgmma_common.cuh"),
    include_str!("conv3x3_wgmma.cu")
);
/// Output rows and pixels of one tile (`WG_TH` x `WG_TW` in conv3x3_wgmma.cu).
const TILE: (usize, usize) = (2, 128);
/// Staged columns of a tile (`WG_SW`).
const STAGED_COLUMNS: usize = TILE.1 + 2;
/// Channels of the padded network input the first layer and the folded tail read.
pub const PADDED_INPUT_CHANNELS: usize = 16;

/// Dynamic shared memory for `chunks` input chunks: the weights and two stage buffers,
/// each also big enough for the epilogue's transposed output (2 x 128 pixels x 72 halves).
fn smem_bytes(chunks: usize) -> usize {
    let stage = (4 * chunks * STAGED_COLUMNS * 16).max(2 * TILE.1 * 72 * 2);
    9 * chunks * 1024 + 2 * stage
}

/// What a wgmma convolution reads.
pub enum WgmmaSource<'a> {
    /// One NHWC half map with the layer's padded input channels (16 or 64), zeros outside.
    Plain(&'a CudaSlice<u16>),
    /// The folded tail: the last layer's 48-channel NHWC map, then the 16-channel padded
    /// network input, both read in place; outside the image the nearest pixel, with the
    /// last layer's channels taken through `remap` (4 x 64: top, bottom, left, right).
    FoldedTail {
        /// The last convolution's output, 48 channels.
        last: &'a CudaSlice<u16>,
        /// The padded network input, 16 channels.
        input: &'a CudaSlice<u16>,
        /// The edge tables, identity past channel 47.
        remap: &'a CudaSlice<i32>,
    },
}

/// Where a wgmma convolution writes.
pub enum WgmmaTarget<'a, 'v> {
    /// NHWC half with `channels` channels a pixel (the layer's first `channels` outputs, a
    /// multiple of 8).
    Nhwc {
        /// The output map.
        out: &'a mut CudaSlice<u16>,
        /// Channels per pixel.
        channels: usize,
    },
    /// Depth-to-space by `block` into planar f32 `[3][h * block][w * block]`, plus the
    /// nearest-upsampled planar f32 input where `residual` is given.
    DepthToSpace {
        /// The network's output.
        out: &'a mut CudaViewMut<'v, f32>,
        /// Block size.
        block: usize,
        /// The network's input, `[3][h][w]`.
        residual: Option<&'a CudaView<'v, f32>>,
    },
}

/// Which form of the wgmma kernel runs (conv3x3_wgmma.cu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WgmmaForm {
    /// The two warpgroups take turns on the tensor cores, each on its own tiles, the staged
    /// input 128-byte swizzled where it has 64 channels a pixel: the one the engine runs.
    PingPong,
    /// `PingPong` without the swizzle (64 channels in only; to measure against).
    Unswizzled,
    /// Both warpgroups on one tile, the epilogue between tiles (64 channels in only).
    Serial,
    /// `Serial` with the descriptors' two core-matrix offsets exchanged: wrong by design, a
    /// diagnostic that shows the tests tell the right reading of the format from the wrong.
    SerialSwapped,
}

/// The wgmma kernels, loaded into one context (compute capability 9.0).
pub struct WgmmaKernels {
    c64: CudaFunction,
    c16: CudaFunction,
    folded_tail: CudaFunction,
    c64_serial: CudaFunction,
    c64_unswizzled: CudaFunction,
    multiprocessors: u32,
}

impl WgmmaKernels {
    /// Compile `conv3x3_wgmma.cu` for sm_90a and load it.
    pub fn load(ctx: &Arc<CudaContext>, multiprocessors: u32) -> Result<Self, GpuError> {
        let [c64, c16, folded_tail, c64_serial, c64_unswizzled] = load_module_functions(
            ctx,
            SOURCE,
            "rave_conv3x3_wgmma.cu",
            "compute_90a",
            [
                "conv3x3_wgmma_c64",
                "conv3x3_wgmma_c16",
                "conv3x3_wgmma_folded_tail",
                "conv3x3_wgmma_c64_serial",
                "conv3x3_wgmma_c64_unswizzled",
            ],
        )?;
        for (f, chunks) in [
            (&c64, 8),
            (&c16, 2),
            (&folded_tail, 8),
            (&c64_serial, 8),
            (&c64_unswizzled, 8),
        ] {
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem_bytes(chunks) as i32,
            )
            .map_err(driver_error("allowing a kernel its shared memory"))?;
        }
        Ok(Self {
            c64,
            c16,
            folded_tail,
            c64_serial,
            c64_unswizzled,
            multiprocessors,
        })
    }

    /// Whether these kernels can run `layer`.
    pub fn supports(layer: &DeviceConv) -> bool {
        layer.wgmma.is_some()
    }

    /// Queue `layer` over `source` into `target` for an image of `height x width` on
    /// `stream`, with the kernel form `form` (the serial forms take 64 plain input channels
    /// only).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        layer: &DeviceConv,
        source: WgmmaSource<'_>,
        target: WgmmaTarget<'_, '_>,
        (height, width): (usize, usize),
        form: WgmmaForm,
    ) -> Result<(), GpuError> {
        let Some(weights) = &layer.wgmma else {
            return Err(GpuError(format!(
                "the wgmma convolution takes up to {WGMMA_CHANNELS} channels in and out, not {} -> {}",
                layer.in_channels, layer.out_channels
            )));
        };
        let pixels = height * width;
        let too_small = |what: &str, have: usize, need: usize| {
            GpuError(format!(
                "wgmma convolution at {width}x{height}: {what} holds {have} values, needs {need}"
            ))
        };
        let serial = matches!(form, WgmmaForm::Serial | WgmmaForm::SerialSwapped);
        let unswizzled = form == WgmmaForm::Unswizzled;
        let (function, main, extra, remap) = match (&source, weights.chunks) {
            (WgmmaSource::Plain(x), 8) if serial => (&self.c64_serial, *x, None, None),
            (WgmmaSource::Plain(x), 8) if unswizzled => (&self.c64_unswizzled, *x, None, None),
            _ if unswizzled => {
                return Err(GpuError(
                    "the unswizzled wgmma form takes plain 64-channel inputs only".into(),
                ));
            }
            (WgmmaSource::Plain(x), 8) => (&self.c64, *x, None, None),
            (WgmmaSource::Plain(x), 2) if !serial => (&self.c16, *x, None, None),
            (WgmmaSource::FoldedTail { last, input, remap }, 8) => {
                (&self.folded_tail, *last, Some(*input), Some(*remap))
            }
            _ => {
                return Err(GpuError(format!(
                    "no wgmma kernel reads this source for a layer of {} input channels",
                    layer.in_channels
                )));
            }
        };
        let main_channels = match extra {
            Some(input) => {
                if input.len() < pixels * PADDED_INPUT_CHANNELS {
                    return Err(too_small(
                        "the padded input",
                        input.len(),
                        pixels * PADDED_INPUT_CHANNELS,
                    ));
                }
                if remap.is_some_and(|r| r.len() < 4 * WGMMA_CHANNELS) {
                    return Err(GpuError(
                        "the folded tail's edge tables hold fewer than 4 x 64 entries".into(),
                    ));
                }
                weights.chunks * 8 - PADDED_INPUT_CHANNELS
            }
            None => weights.chunks * 8,
        };
        if main.len() < pixels * main_channels {
            return Err(too_small("the input", main.len(), pixels * main_channels));
        }
        let dims = [height, width].map(|d| i32::try_from(d).unwrap_or(i32::MAX));
        if dims.contains(&i32::MAX) {
            return Err(GpuError(format!(
                "a {width}x{height} image is too large for the convolution kernels"
            )));
        }
        let act = i32::from(layer.activated);
        let swap = i32::from(form == WgmmaForm::SerialSwapped);
        let null = 0u64;
        let cfg = LaunchConfig {
            grid_dim: (
                ((height.div_ceil(TILE.0) * width.div_ceil(TILE.1)) as u32)
                    .clamp(1, self.multiprocessors),
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: smem_bytes(weights.chunks) as u32,
        };
        let mut args = stream.launch_builder(function);
        args.arg(main);
        match extra {
            Some(input) => args.arg(input),
            None => args.arg(&null),
        };
        match remap {
            Some(r) => args.arg(r),
            None => args.arg(&null),
        };
        args.arg(&weights.weight)
            .arg(&weights.bias)
            .arg(&weights.slope);
        let (out_channels, block);
        match target {
            WgmmaTarget::Nhwc { out, channels } => {
                if channels % 8 != 0 || channels > layer.out_channels.next_multiple_of(8) {
                    return Err(GpuError(format!(
                        "a layer of {} outputs cannot fill {channels} channels a pixel",
                        layer.out_channels
                    )));
                }
                if out.len() < pixels * channels {
                    return Err(too_small("the output", out.len(), pixels * channels));
                }
                args.arg(out).arg(&null).arg(&null);
                (out_channels, block) = (channels as i32, 0i32);
            }
            WgmmaTarget::DepthToSpace {
                out,
                block: b,
                residual,
            } => {
                if !(2..=4).contains(&b) || layer.out_channels != 3 * b * b {
                    return Err(GpuError(format!(
                        "depth-to-space by {b} needs {} output channels, the layer has {}",
                        3 * b * b,
                        layer.out_channels
                    )));
                }
                if out.len() < 3 * pixels * b * b {
                    return Err(too_small("the output", out.len(), 3 * pixels * b * b));
                }
                // The epilogue indexes the planar output with 32-bit offsets.
                if 3 * pixels * b * b > i32::MAX as usize {
                    return Err(GpuError(format!(
                        "a {width}x{height} frame upscaled x{b} has more output values than the depth-to-space epilogue can address ({} > {}); tile it",
                        3 * pixels * b * b,
                        i32::MAX
                    )));
                }
                if let Some(r) = residual
                    && r.len() < 3 * pixels
                {
                    return Err(too_small("the residual input", r.len(), 3 * pixels));
                }
                args.arg(&null).arg(out);
                match residual {
                    Some(r) => args.arg(r),
                    None => args.arg(&null),
                };
                (out_channels, block) = (0i32, b as i32);
            }
        }
        args.arg(&dims[0])
            .arg(&dims[1])
            .arg(&out_channels)
            .arg(&block)
            .arg(&act)
            .arg(&swap);
        // SAFETY: the arguments match the WGMMA_KERNEL signature in conv3x3_wgmma.cu; the
        // kernel was picked by the layer's input chunks, and every buffer it reads or
        // writes was checked above to hold the image at the channel counts it uses; the
        // null pointers are for arguments that kernel and mode never touch (input_b and
        // remap without the folded tail, planar and residual with NHWC output, output with
        // planar output); all buffers belong to `stream`'s context.
        unsafe { args.launch(cfg) }
            .map(|_| ())
            .map_err(driver_error("launching the wgmma convolution"))
    }
}
