//! The streamed convolution kernels of `conv3x3_streamed.cu` (any input width, weights
//! streamed with the input): what a launch reads ([`StreamedSource`]), writes
//! ([`StreamedTarget`]) and adds ([`Residual`]), checked against the layer and the image
//! before anything is queued.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};

use super::streamed_conv::{KSTEP_CHANNELS, StreamedConv, taps};
use super::streamed_plan::{LaunchPlan, SourceShape, TargetShape, plan};
use super::tensor_map::nhwc_source_map;
use super::{GpuError, driver_error, load_module_functions};

const SOURCE: &str = concat!(
    include_str!("wgmma_common.cuh"),
    include_str!("conv3x3_streamed.cu")
);
/// Pixels of a tile row (`SK_TW`) and staged columns (`SK_SW`).
const TILE_WIDTH: usize = 128;
const STAGED_COLUMNS: usize = TILE_WIDTH + 2;

/// Output rows of a tile: 4, or 8 when stacked (`StreamedShape::TILE_ROWS`).
fn tile_rows(stacked: bool) -> usize {
    if stacked { 8 } else { 4 }
}

/// Dynamic shared memory of one form: its stages, each the staged input rows of one
/// k-step (32 bytes a pixel) and that k-step's weights, rounded up to 1024 bytes
/// (`StreamedShape`), then two mbarriers (8 bytes each) a stage.
fn smem_bytes(stacked: bool) -> usize {
    let stage =
        (staged_rows(stacked) * STAGED_COLUMNS * 32 + taps(stacked) * 2048).next_multiple_of(1024);
    let stages = if stacked { 3 } else { 4 };
    stages * stage + stages * 16
}

/// Input rows staged for a tile: its rows and one above and below.
fn staged_rows(stacked: bool) -> usize {
    tile_rows(stacked) + 2
}

/// What a streamed convolution reads: NHWC half, `stride` channels a pixel, the layer's
/// input channels first.
pub enum StreamedSource<'a> {
    /// A map of the image's size, or of half its size read through nearest x2 upsampling.
    Map {
        /// The map.
        map: &'a CudaSlice<u16>,
        /// Channels per pixel.
        stride: usize,
        /// Whether the map is half the output's size, upsampled by nearest x2 on the fly.
        upsampled: bool,
    },
    /// The leading channels of the target map itself (a dense block's convolution reading
    /// the concatenation it adds to); the target's channels must lie past them.
    TargetPrefix,
}

impl<'a> StreamedSource<'a> {
    /// A map of the image's own size.
    pub fn plain(map: &'a CudaSlice<u16>, stride: usize) -> Self {
        Self::Map {
            map,
            stride,
            upsampled: false,
        }
    }
}

/// Where a streamed convolution writes.
pub enum StreamedTarget<'a, 'v> {
    /// Channels `offset ..` of an NHWC half map with `stride` channels a pixel.
    Nhwc {
        /// The map.
        map: &'a mut CudaSlice<u16>,
        /// Channels per pixel.
        stride: usize,
        /// The first channel written.
        offset: usize,
    },
    /// Planar f32 `[out channels][h][w]` (the network's end; no residuals).
    Planar(&'a mut CudaViewMut<'v, f32>),
}

/// Residual sums in the epilogue, in this order: `v = source + input_scale * v` (the
/// source's leading channels at the output pixel), then `v = old + target_scale * v` (the
/// target's own values there, read before they are overwritten).
#[derive(Debug, Clone, Copy, Default)]
pub struct Residual {
    /// Scale of the value when the source's leading channels are added.
    pub source: Option<f32>,
    /// Scale of the value when the target's old values are added.
    pub target: Option<f32>,
}

/// The streamed kernels, loaded into one context (compute capability 9.0).
pub struct StreamedKernels {
    c64: CudaFunction,
    c32: CudaFunction,
    tma_c64: CudaFunction,
    tma_c32: CudaFunction,
    multiprocessors: u32,
    tensor_copies: bool,
}

impl StreamedKernels {
    /// Compile `conv3x3_streamed.cu` for sm_90a and load it.
    pub fn load(ctx: &Arc<CudaContext>, multiprocessors: u32) -> Result<Self, GpuError> {
        let [c64, c32, tma_c64, tma_c32] = load_module_functions(
            ctx,
            SOURCE,
            "rave_conv3x3_streamed.cu",
            "compute_90a",
            [
                "conv3x3_streamed_c64",
                "conv3x3_streamed_c32",
                "conv3x3_streamed_tma_c64",
                "conv3x3_streamed_tma_c32",
            ],
        )?;
        for (f, stacked) in [
            (&c64, false),
            (&c32, true),
            (&tma_c64, false),
            (&tma_c32, true),
        ] {
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem_bytes(stacked) as i32,
            )
            .map_err(driver_error("allowing a kernel its shared memory"))?;
        }
        Ok(Self {
            c64,
            c32,
            tma_c64,
            tma_c32,
            multiprocessors: multiprocessors.max(1),
            tensor_copies: true,
        })
    }

    /// Whether sources of the output's own size are staged by tensor copies (the default)
    /// or, like upsampled sources always are, by every thread's cp.async: for comparisons.
    pub fn set_tensor_copies(&mut self, on: bool) {
        self.tensor_copies = on;
    }

    /// Queue `layer` over `source` into `target` for an output image of `height x width`
    /// on `stream`, adding `residual`.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        layer: &StreamedConv,
        source: StreamedSource<'_>,
        target: StreamedTarget<'_, '_>,
        residual: Residual,
        (height, width): (usize, usize),
    ) -> Result<(), GpuError> {
        let read = layer.ksteps * KSTEP_CHANNELS;
        let cout = layer.out_channels;
        // Every bound the kernel relies on, checked before any device address is taken.
        let source_shape = match &source {
            StreamedSource::Map {
                map,
                stride,
                upsampled,
            } => SourceShape::Map {
                len: map.len(),
                stride: *stride,
                upsampled: *upsampled,
            },
            StreamedSource::TargetPrefix => SourceShape::TargetPrefix,
        };
        let target_shape = match &target {
            StreamedTarget::Nhwc {
                map,
                stride,
                offset,
            } => TargetShape::Nhwc {
                len: map.len(),
                stride: *stride,
                offset: *offset,
            },
            StreamedTarget::Planar(view) => TargetShape::Planar { len: view.len() },
        };
        let LaunchPlan {
            in_stride,
            up_shift,
        } = plan(
            read,
            cout,
            source_shape,
            target_shape,
            residual,
            (height, width),
        )
        .map_err(|what| GpuError(format!("streamed convolution at {width}x{height}: {what}")))?;
        let tensor_copies = self.tensor_copies && up_shift == 0;
        let function = match (tensor_copies, layer.stacked) {
            (false, false) => &self.c64,
            (false, true) => &self.c32,
            (true, false) => &self.tma_c64,
            (true, true) => &self.tma_c32,
        };
        let tiles = height.div_ceil(tile_rows(layer.stacked)) * width.div_ceil(TILE_WIDTH);
        let cfg = LaunchConfig {
            grid_dim: ((tiles as u32).clamp(1, self.multiprocessors), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: smem_bytes(layer.stacked) as u32,
        };
        // plan() checked that sizes, strides and offsets fit the kernel's 32-bit arithmetic.
        let dims = [height, width].map(|d| d as i32);
        let scales = [
            residual.source.unwrap_or(0.0),
            residual.target.unwrap_or(0.0),
        ];
        let [in_stride, ksteps] = [in_stride, layer.ksteps].map(|v| v as i32);
        let act = i32::from(layer.activated);
        // Device addresses are taken once each (the target is mutably borrowed, and may be
        // the source too), and live with their guards until the launch is queued.
        let (out_ptr, planar_ptr, out_stride, out_offset, _out_guard);
        let target_is_nhwc;
        match target {
            StreamedTarget::Nhwc {
                map,
                stride,
                offset,
            } => {
                let (p, g) = map.device_ptr_mut(stream);
                (out_ptr, planar_ptr, _out_guard) = (p, 0u64, Some(g));
                (out_stride, out_offset) = (stride as i32, offset as i32);
                target_is_nhwc = true;
            }
            StreamedTarget::Planar(view) => {
                let (p, g) = view.device_ptr_mut(stream);
                (out_ptr, planar_ptr, _out_guard) = (0u64, p, Some(g));
                (out_stride, out_offset) = (0, 0);
                target_is_nhwc = false;
            }
        }
        let (in_ptr, _in_guard) = match &source {
            StreamedSource::Map { map, .. } => {
                let (p, g) = map.device_ptr(stream);
                (p, Some(g))
            }
            StreamedSource::TargetPrefix => (out_ptr, None),
        };
        let res_a = if residual.source.is_some() { in_ptr } else { 0 };
        let res_b = match residual.target {
            Some(_) if target_is_nhwc => out_ptr + 2 * out_offset as u64,
            _ => 0,
        };
        let out_channels = cout as i32;
        let source_map = if tensor_copies {
            let rows = staged_rows(layer.stacked) as u32;
            // SAFETY: `in_ptr` is the start of the source (the map, or the target when it is
            // its own source), which `plan` checked holds `in_stride` channels for each of
            // the `height x width` pixels, and whose guard outlives the launch below.
            Some(unsafe {
                nhwc_source_map(
                    in_ptr,
                    in_stride as usize,
                    (height, width),
                    (rows, STAGED_COLUMNS as u32),
                )
            }?)
        } else {
            None
        };
        let mut args = stream.launch_builder(function);
        if let Some(map) = &source_map {
            args.arg(map);
        }
        args.arg(&in_ptr)
            .arg(&in_stride)
            .arg(&up_shift)
            .arg(&layer.weight)
            .arg(&layer.bias)
            .arg(&layer.slope)
            .arg(&ksteps)
            .arg(&out_ptr)
            .arg(&out_stride)
            .arg(&out_offset)
            .arg(&out_channels)
            .arg(&res_a)
            .arg(&in_stride)
            .arg(&scales[0])
            .arg(&res_b)
            .arg(&out_stride)
            .arg(&scales[1])
            .arg(&planar_ptr)
            .arg(&dims[0])
            .arg(&dims[1])
            .arg(&act);
        // SAFETY: the arguments match STREAMED_KERNEL (STREAMED_TMA_KERNEL, with the tensor
        // map of the source first) in conv3x3_streamed.cu. Every address
        // comes from a buffer of `stream`'s context whose size `plan` checked (above) for the
        // pixels and channel ranges the kernel touches: the source's first `read` channels
        // (`stride` apart, at the output size or half of it); the target's channels
        // `offset .. offset + cout`, disjoint from the channels it reads when the target is
        // its own source (checked); the residuals at the output pixel, channels 0 .. cout
        // of the source (same stride) or of the target slice itself (each value read and
        // then written by one thread); the planar target's cout planes. Zero addresses go
        // only to arguments the kernel does not dereference in this mode (the NHWC output
        // with a planar target and back, absent residuals).
        unsafe { args.launch(cfg) }
            .map(|_| ())
            .map_err(driver_error("launching the streamed convolution"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_fit_hoppers_shared_memory() {
        // 227 KiB of dynamic shared memory a block on compute capability 9.0.
        for stacked in [false, true] {
            assert!(smem_bytes(stacked) <= 227 * 1024, "{}", smem_bytes(stacked));
        }
        assert_eq!(smem_bytes(false), 4 * 44032 + 64);
        assert_eq!(smem_bytes(true), 3 * 66560 + 48);
    }
}
