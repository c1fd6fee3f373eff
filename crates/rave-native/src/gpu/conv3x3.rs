//! 3x3 convolution with bias and PReLU/LeakyReLU fused, on tensor cores (`conv3x3.cu`):
//! NHWC half-precision activations, FP32 accumulation.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use half::f16;

use super::{GpuError, nvrtc_arch};
use crate::network::{Activation, Conv3x3};

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
    /// Fragments read straight from global memory (any channel counts).
    Direct,
    /// Weights resident in shared memory, input rows staged there (up to 64 channels in
    /// and out).
    Staged,
}

/// Dynamic shared memory of the staged kernel for `cin` input channels (see conv3x3.cu).
fn staged_smem_bytes(cin: usize) -> usize {
    let (th, tw) = STAGED_TILE;
    2 * (64 * (9 * cin + 8) + (th + 2) * (tw + 2) * (cin + 8))
}

fn gpu(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError(format!("{what}: {e}"))
}

/// One layer's weights on the device in the kernel's layout: weights `[out][ky][kx][in]` in
/// half precision, bias and negative slopes in f32.
pub struct DeviceConv {
    weight: CudaSlice<u16>,
    bias: CudaSlice<f32>,
    slope: CudaSlice<f32>,
    in_channels: usize,
    out_channels: usize,
    activated: bool,
}

impl DeviceConv {
    /// Upload `conv` (padding 1) followed by `activation`. The kernel needs input channels
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
        let mut ohwi = vec![0u16; cout * 9 * cin];
        for o in 0..cout {
            for c in 0..cin {
                for tap in 0..9 {
                    let v = conv.weight[(o * cin + c) * 9 + tap];
                    ohwi[(o * 9 + tap) * cin + c] = f16::from_f32(v).to_bits();
                }
            }
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
        let upload = gpu("uploading a layer's weights");
        Ok(Self {
            weight: stream.clone_htod(&ohwi).map_err(upload)?,
            bias: stream
                .clone_htod(&conv.bias)
                .map_err(gpu("uploading a bias"))?,
            slope: stream.clone_htod(&slope).map_err(gpu("uploading slopes"))?,
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

/// The convolution kernels loaded into one context.
pub struct Conv3x3Kernel {
    direct: CudaFunction,
    staged: CudaFunction,
    /// Blocks of the staged (persistent) kernel: two per multiprocessor.
    staged_blocks: u32,
}

impl Conv3x3Kernel {
    /// Compile the kernel for `ctx`'s device and load it; refused below compute capability
    /// 8.0.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self, GpuError> {
        let (major, minor) = ctx
            .compute_capability()
            .map_err(gpu("reading the compute capability"))?;
        let arch = nvrtc_arch(major, minor).ok_or_else(|| {
            GpuError(format!(
                "compute capability {major}.{minor}: the native kernels need 8.0 or newer (tensor-core mma.sync)"
            ))
        })?;
        let opts = CompileOptions {
            arch: Some(arch),
            name: Some("rave_conv3x3.cu".into()),
            ..Default::default()
        };
        let ptx = compile_ptx_with_opts(SOURCE, opts)
            .map_err(|e| GpuError(format!("compiling the convolution kernel: {e}")))?;
        let module = ctx
            .load_module(ptx)
            .map_err(gpu("loading the convolution kernel"))?;
        let direct = module
            .load_function(KERNEL)
            .map_err(gpu("finding the convolution kernel"))?;
        let staged = module
            .load_function(KERNEL_STAGED)
            .map_err(gpu("finding the staged convolution kernel"))?;
        staged
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                staged_smem_bytes(STAGED_MAX_CHANNELS) as i32,
            )
            .map_err(gpu("allowing the staged kernel its shared memory"))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(gpu("reading the multiprocessor count"))?;
        Ok(Self {
            direct,
            staged,
            staged_blocks: 2 * sms.max(1) as u32,
        })
    }

    /// The version `run` picks for `layer`: staged where it fits.
    pub fn best_version(layer: &DeviceConv) -> ConvVersion {
        match layer.in_channels <= STAGED_MAX_CHANNELS && layer.out_channels <= STAGED_MAX_CHANNELS
        {
            true => ConvVersion::Staged,
            false => ConvVersion::Direct,
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
        let version = Self::best_version(layer);
        self.run_version(version, stream, layer, input, output, (height, width))
    }

    /// `run` with the version chosen by the caller (to compare them); `Staged` is refused
    /// for layers over 64 channels.
    pub fn run_version(
        &self,
        version: ConvVersion,
        stream: &Arc<CudaStream>,
        layer: &DeviceConv,
        input: &CudaSlice<u16>,
        output: &mut CudaSlice<u16>,
        (height, width): (usize, usize),
    ) -> Result<(), GpuError> {
        if version == ConvVersion::Staged && Self::best_version(layer) != ConvVersion::Staged {
            return Err(GpuError(format!(
                "the staged convolution takes up to {STAGED_MAX_CHANNELS} channels in and out, not {} -> {}",
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
            ConvVersion::Staged => {
                let tiles = height.div_ceil(STAGED_TILE.0) * width.div_ceil(STAGED_TILE.1);
                (
                    &self.staged,
                    LaunchConfig {
                        grid_dim: ((tiles as u32).clamp(1, self.staged_blocks), 1, 1),
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
        // SAFETY: the arguments match the kernel's signature in conv3x3.cu; the buffers were
        // checked above to hold the image at the layer's channel counts, and the weights,
        // bias and slopes were uploaded for exactly those counts; all belong to `stream`'s
        // context.
        unsafe { args.launch(cfg) }
            .map(|_| ())
            .map_err(gpu("launching the convolution"))
    }
}
