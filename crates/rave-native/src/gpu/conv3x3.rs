//! 3x3 convolution with bias and PReLU/LeakyReLU fused, on tensor cores: NHWC
//! half-precision activations, FP32 accumulation. Three forms of the kernel, chosen per
//! layer by [`Conv3x3Kernel::best_version`]: `conv3x3.cu` (mma.sync, any architecture from
//! 8.0) and `conv3x3_wgmma.cu` (Hopper's wgmma, compute capability 9.0, 64 channels).

use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};

use super::device_conv::{DeviceConv, WGMMA_CHANNELS};
use super::{GpuError, driver_error, nvrtc_arch};

const SOURCE: &str = include_str!("conv3x3.cu");
const SOURCE_WGMMA: &str = include_str!("conv3x3_wgmma.cu");
const KERNEL: &str = "conv3x3_nhwc_f16";
const KERNEL_STAGED: &str = "conv3x3_nhwc_f16_v2";
const KERNEL_WGMMA: &str = "conv3x3_nhwc_f16_wgmma";
/// Output pixels and channels one block of the direct kernel computes (see conv3x3.cu).
const TILE_PIXELS: u32 = 64;
const TILE_CHANNELS: usize = 64;
/// The staged kernel's tile (`V2_TH` x `V2_TW` in conv3x3.cu) and its largest layer.
const STAGED_TILE: (usize, usize) = (2, 64);
const STAGED_MAX_CHANNELS: usize = 64;
/// The wgmma kernel's tile (`WG_TH` x `WG_TW`) and shared memory: the weights and two
/// stage buffers of 4 x 130 staged pixels (conv3x3_wgmma.cu).
const WGMMA_TILE: (usize, usize) = (2, 128);
const WGMMA_SMEM_BYTES: usize = 9 * 8 * 64 * 16 + 2 * (4 * 8 * 130 * 16);

/// Which form of the kernel runs a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvVersion {
    /// mma.sync, fragments read straight from global memory (any channel counts).
    Direct,
    /// mma.sync, weights resident in shared memory, input rows staged there (up to 64
    /// channels in and out).
    Staged,
    /// Hopper's wgmma from shared memory, the next tile staged while the current one
    /// computes (64 channels in and out, compute capability 9.0).
    Wgmma,
    /// `Wgmma` with the descriptor's two core-matrix offsets exchanged: wrong by design, a
    /// diagnostic that shows the test tells the two readings of the format apart.
    WgmmaSwapped,
}

/// Dynamic shared memory of the staged kernel for `cin` input channels (see conv3x3.cu).
fn staged_smem_bytes(cin: usize) -> usize {
    let (th, tw) = STAGED_TILE;
    2 * (64 * (9 * cin + 8) + (th + 2) * (tw + 2) * (cin + 8))
}

/// Compile `source` for `arch` and load `names` from it.
fn load_functions<const N: usize>(
    ctx: &Arc<CudaContext>,
    source: &str,
    file: &str,
    arch: &'static str,
    names: [&str; N],
) -> Result<[CudaFunction; N], GpuError> {
    let opts = CompileOptions {
        arch: Some(arch),
        name: Some(file.into()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(source, opts)
        .map_err(|e| GpuError(format!("compiling {file} for {arch}: {e}")))?;
    let module = ctx
        .load_module(ptx)
        .map_err(driver_error("loading a convolution kernel"))?;
    let mut out = Vec::with_capacity(N);
    for name in names {
        out.push(
            module
                .load_function(name)
                .map_err(driver_error("finding a convolution kernel"))?,
        );
    }
    out.try_into()
        .map_err(|_| GpuError("kernel count mismatch".into()))
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
    wgmma: Option<CudaFunction>,
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
        let [direct, staged] = load_functions(
            ctx,
            SOURCE,
            "rave_conv3x3.cu",
            arch,
            [KERNEL, KERNEL_STAGED],
        )?;
        allow_shared_memory(&staged, staged_smem_bytes(STAGED_MAX_CHANNELS))?;
        let wgmma = match (major, minor) {
            (9, 0) => {
                let [f] = load_functions(
                    ctx,
                    SOURCE_WGMMA,
                    "rave_conv3x3_wgmma.cu",
                    "compute_90a",
                    [KERNEL_WGMMA],
                )?;
                allow_shared_memory(&f, WGMMA_SMEM_BYTES)?;
                Some(f)
            }
            _ => None,
        };
        let sms = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver_error("reading the multiprocessor count"))?;
        Ok(Self {
            direct,
            staged,
            wgmma,
            multiprocessors: sms.max(1) as u32,
        })
    }

    /// Whether the wgmma form was loaded (compute capability 9.0).
    pub fn has_wgmma(&self) -> bool {
        self.wgmma.is_some()
    }

    /// The version `run` picks for `layer`: wgmma where it applies, else staged where it
    /// fits, else direct.
    pub fn best_version(&self, layer: &DeviceConv) -> ConvVersion {
        if self.wgmma.is_some() && layer.wgmma_weight.is_some() {
            ConvVersion::Wgmma
        } else if layer.in_channels <= STAGED_MAX_CHANNELS
            && layer.out_channels <= STAGED_MAX_CHANNELS
        {
            ConvVersion::Staged
        } else {
            ConvVersion::Direct
        }
    }

    /// Whether `version` can run `layer` here.
    pub fn supports(&self, version: ConvVersion, layer: &DeviceConv) -> bool {
        match version {
            ConvVersion::Direct => true,
            ConvVersion::Staged => {
                layer.in_channels <= STAGED_MAX_CHANNELS
                    && layer.out_channels <= STAGED_MAX_CHANNELS
            }
            ConvVersion::Wgmma | ConvVersion::WgmmaSwapped => {
                self.wgmma.is_some() && layer.wgmma_weight.is_some()
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
                "the {version:?} convolution cannot run {} -> {} channels here (staged: up to {STAGED_MAX_CHANNELS}; wgmma: exactly {WGMMA_CHANNELS}, compute capability 9.0)",
                layer.in_channels, layer.out_channels
            )));
        }
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
                    .arg(&layer.weight)
                    .arg(&layer.bias)
                    .arg(&layer.slope)
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
            ConvVersion::Wgmma | ConvVersion::WgmmaSwapped => {
                let (Some(function), Some(weight)) = (&self.wgmma, &layer.wgmma_weight) else {
                    unreachable!("supports() checked both");
                };
                let tiles = height.div_ceil(WGMMA_TILE.0) * width.div_ceil(WGMMA_TILE.1);
                let cfg = LaunchConfig {
                    grid_dim: ((tiles as u32).clamp(1, self.multiprocessors), 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: WGMMA_SMEM_BYTES as u32,
                };
                let swap = i32::from(version == ConvVersion::WgmmaSwapped);
                let mut args = stream.launch_builder(function);
                args.arg(input)
                    .arg(weight)
                    .arg(&layer.bias)
                    .arg(&layer.slope)
                    .arg(output)
                    .arg(&h)
                    .arg(&w)
                    .arg(&act)
                    .arg(&swap);
                // SAFETY: the arguments match conv3x3_nhwc_f16_wgmma's signature; the
                // layer has 64 channels in and out (it has wgmma weights, 9 x 64 x 64
                // halves), and the buffers were checked above to hold the image at 64
                // channels; all belong to `stream`'s context.
                unsafe { args.launch(cfg) }
            }
        }
        .map(|_| ())
        .map_err(driver_error("launching the convolution"))
    }
}
