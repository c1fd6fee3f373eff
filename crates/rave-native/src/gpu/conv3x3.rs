//! 3x3 convolution with bias and PReLU/LeakyReLU fused, on tensor cores: NHWC
//! half-precision activations, FP32 accumulation. Three forms of the kernel, chosen per
//! layer by [`Conv3x3Kernel::best_version`]: `conv3x3.cu` (mma.sync, any architecture from
//! 8.0) and `conv3x3_wgmma.cu` (Hopper's wgmma, compute capability 9.0, 64 channels).

use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};

use super::device_conv::{DeviceConv, WGMMA_CHANNELS};
use super::wgmma::{WgmmaForm, WgmmaKernels, WgmmaSource, WgmmaTarget};
use super::{GpuError, driver_error, load_module_functions, nvrtc_arch};

const SOURCE: &str = include_str!("conv3x3.cu");
const KERNEL: &str = "conv3x3_nhwc_f16";
const KERNEL_STAGED: &str = "conv3x3_nhwc_f16_v2";
/// Output pixels and channels one block of the direct kernel computes (see conv3x3.cu).
const TILE_PIXELS: u32 = 64;
const TILE_CHANNELS: usize = 64;
/// The staged kernel's tile (`V2_TH` x `V2_TW` in conv3x3.cu) and its largest layer.
const STAGED_TILE: (usize, usize) = (2, 64);
const STAGED_MAX_CHANNELS: usize = 64;

/// Which form of the kernel runs a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvVersion {
    /// mma.sync, fragments read straight from global memory (any channel counts).
    Direct,
    /// mma.sync, weights resident in shared memory, input rows staged there (up to 64
    /// channels in and out).
    Staged,
    /// Hopper's wgmma from shared memory, the two warpgroups taking turns on the tensor
    /// cores, the staged input 128-byte swizzled at 64 channels (16 or 64 channels in, up to
    /// 64 out, compute capability 9.0).
    Wgmma,
    /// wgmma with both warpgroups on one tile and the epilogue between tiles (64 in).
    WgmmaSerial,
    /// `WgmmaSerial` with the descriptor's two core-matrix offsets exchanged: wrong by
    /// design, a diagnostic that shows the test tells the two readings of the format apart.
    WgmmaSwapped,
    /// `Wgmma` without the 128-byte swizzle of the staged input (64 channels in).
    WgmmaUnswizzled,
}

/// Dynamic shared memory of the staged kernel for `cin` input channels (see conv3x3.cu).
fn staged_smem_bytes(cin: usize) -> usize {
    let (th, tw) = STAGED_TILE;
    2 * (64 * (9 * cin + 8) + (th + 2) * (tw + 2) * (cin + 8))
}

fn allow_shared_memory(function: &CudaFunction, bytes: usize) -> Result<(), GpuError> {
    function
        .set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(driver_error("allowing a kernel its shared memory"))
}

/// The convolution kernels loaded into one context.
pub struct Conv3x3Kernel {
    direct: CudaFunction,
    staged: CudaFunction,
    wgmma: Option<WgmmaKernels>,
    multiprocessors: u32,
}

impl Conv3x3Kernel {
    /// Compile the kernels for `ctx`'s device and load them; refused below compute
    /// capability 8.0. The wgmma form is loaded on compute capability 9.0 only.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self, GpuError> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_error("reading the compute capability"))?;
        let arch = nvrtc_arch(major, minor).ok_or_else(|| {
            GpuError(format!(
                "compute capability {major}.{minor}: the native kernels need 8.0 or newer (tensor-core mma.sync)"
            ))
        })?;
        let [direct, staged] = load_module_functions(
            ctx,
            SOURCE,
            "rave_conv3x3.cu",
            arch,
            [KERNEL, KERNEL_STAGED],
        )?;
        allow_shared_memory(&staged, staged_smem_bytes(STAGED_MAX_CHANNELS))?;
        let sms = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver_error("reading the multiprocessor count"))?;
        let multiprocessors = sms.max(1) as u32;
        let wgmma = match (major, minor) {
            (9, 0) => Some(WgmmaKernels::load(ctx, multiprocessors)?),
            _ => None,
        };
        Ok(Self {
            direct,
            staged,
            wgmma,
            multiprocessors,
        })
    }

    /// The wgmma kernels, where they were loaded (compute capability 9.0).
    pub fn wgmma(&self) -> Option<&WgmmaKernels> {
        self.wgmma.as_ref()
    }

    /// The version `run` picks for `layer`: wgmma where it applies, else staged where it
    /// fits, else direct.
    pub fn best_version(&self, layer: &DeviceConv) -> ConvVersion {
        [ConvVersion::Wgmma, ConvVersion::Staged, ConvVersion::Direct]
            .into_iter()
            .find(|v| self.supports(*v, layer))
            .unwrap_or(ConvVersion::Direct)
    }

    /// Whether `version` can run `layer` here.
    pub fn supports(&self, version: ConvVersion, layer: &DeviceConv) -> bool {
        let plain_wgmma = layer.wgmma.as_ref().is_some_and(|w| {
            w.chunks * 8 == layer.in_channels && layer.out_channels.is_multiple_of(8)
        });
        match version {
            ConvVersion::Direct => layer.mma.is_some(),
            ConvVersion::Staged => {
                layer.mma.is_some()
                    && layer.in_channels <= STAGED_MAX_CHANNELS
                    && layer.out_channels <= STAGED_MAX_CHANNELS
            }
            ConvVersion::Wgmma => self.wgmma.is_some() && plain_wgmma,
            ConvVersion::WgmmaSerial | ConvVersion::WgmmaSwapped | ConvVersion::WgmmaUnswizzled => {
                self.wgmma.is_some() && plain_wgmma && layer.in_channels == WGMMA_CHANNELS
            }
        }
    }

    /// Queue `layer` over `input` (`height x width x in_channels`, NHWC half bits) into
    /// `output` (`height x width x out_channels`) on `stream`, with the best version.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        layer: &DeviceConv,
        input: &CudaSlice<u16>,
        output: &mut CudaSlice<u16>,
        height: usize,
        width: usize,
    ) -> Result<(), GpuError> {
        let version = self.best_version(layer);
        self.run_version(version, stream, layer, input, output, (height, width))
    }

    /// `run` with the version chosen by the caller (to compare them); a version that
    /// cannot run the layer here is refused.
    pub fn run_version(
        &self,
        version: ConvVersion,
        stream: &Arc<CudaStream>,
        layer: &DeviceConv,
        input: &CudaSlice<u16>,
        output: &mut CudaSlice<u16>,
        (height, width): (usize, usize),
    ) -> Result<(), GpuError> {
        if !self.supports(version, layer) {
            return Err(GpuError(format!(
                "the {version:?} convolution cannot run {} -> {} channels here (mma.sync: multiples of 16 in, 8 out; staged: up to {STAGED_MAX_CHANNELS}; wgmma: 16 or 64 in, up to {WGMMA_CHANNELS} out, compute capability 9.0)",
                layer.in_channels, layer.out_channels
            )));
        }
        if let (
            ConvVersion::Wgmma
            | ConvVersion::WgmmaSerial
            | ConvVersion::WgmmaSwapped
            | ConvVersion::WgmmaUnswizzled,
            Some(kernels),
        ) = (version, &self.wgmma)
        {
            let target = WgmmaTarget::Nhwc {
                out: output,
                channels: layer.out_channels,
            };
            let form = match version {
                ConvVersion::WgmmaSerial => WgmmaForm::Serial,
                ConvVersion::WgmmaSwapped => WgmmaForm::SerialSwapped,
                ConvVersion::WgmmaUnswizzled => WgmmaForm::Unswizzled,
                _ => WgmmaForm::PingPong,
            };
            return kernels.run(
                stream,
                layer,
                WgmmaSource::Plain(input),
                target,
                (height, width),
                form,
            );
        }
        let Some(weights) = &layer.mma else {
            return Err(GpuError("no mma.sync weights for this layer".into()));
        };
        let pixels = height * width;
        if input.len() < pixels * layer.in_channels || output.len() < pixels * layer.out_channels {
            return Err(GpuError(format!(
                "convolution buffers too small for {width}x{height}: input {} of {}, output {} of {}",
                input.len(),
                pixels * layer.in_channels,
                output.len(),
                pixels * layer.out_channels
            )));
        }
        let dims = [height, width, layer.in_channels, layer.out_channels];
        let [h, w, cin, cout] = dims.map(|d| i32::try_from(d).unwrap_or(i32::MAX));
        let act = i32::from(layer.activated);
        match version {
            ConvVersion::Direct | ConvVersion::Staged => {
                let (function, cfg) = match version {
                    ConvVersion::Direct => (
                        &self.direct,
                        LaunchConfig {
                            grid_dim: (
                                (width as u32).div_ceil(TILE_PIXELS),
                                height as u32,
                                layer.out_channels.div_ceil(TILE_CHANNELS) as u32,
                            ),
                            block_dim: (128, 1, 1),
                            shared_mem_bytes: 0,
                        },
                    ),
                    _ => {
                        let tiles = height.div_ceil(STAGED_TILE.0) * width.div_ceil(STAGED_TILE.1);
                        (
                            &self.staged,
                            LaunchConfig {
                                grid_dim: ((tiles as u32).clamp(1, 2 * self.multiprocessors), 1, 1),
                                block_dim: (256, 1, 1),
                                shared_mem_bytes: staged_smem_bytes(layer.in_channels) as u32,
                            },
                        )
                    }
                };
                let mut args = stream.launch_builder(function);
                args.arg(input)
                    .arg(&weights.weight)
                    .arg(&weights.bias)
                    .arg(&weights.slope)
                    .arg(output)
                    .arg(&h)
                    .arg(&w)
                    .arg(&cin)
                    .arg(&cout)
                    .arg(&act);
                // SAFETY: the arguments match the kernel's signature in conv3x3.cu; the
                // buffers were checked above to hold the image at the layer's channel
                // counts, and the weights, bias and slopes were uploaded for exactly those
                // counts; all belong to `stream`'s context.
                unsafe { args.launch(cfg) }
            }
            ConvVersion::Wgmma
            | ConvVersion::WgmmaSerial
            | ConvVersion::WgmmaSwapped
            | ConvVersion::WgmmaUnswizzled => {
                unreachable!("returned above: supports() found the wgmma kernels")
            }
        }
        .map(|_| ())
        .map_err(driver_error("launching the convolution"))
    }
}
