//! What both whole-network engines do at their start: check the GPU is one their kernels
//! run on, and pack the planar f32 RGB input into the 16-channel NHWC half map their first
//! layer reads (`layout.cu`).

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, LaunchConfig, PushKernelArg,
};

use super::wgmma::PADDED_INPUT_CHANNELS;
use super::{GpuError, driver_error, load_module_functions, nvrtc_arch};

const LAYOUT_SOURCE: &str = include_str!("layout.cu");

/// The multiprocessor count of `ctx`'s GPU, or why the native kernels (Hopper's wgmma)
/// cannot run there.
pub(super) fn hopper_multiprocessors(ctx: &Arc<CudaContext>) -> Result<u32, GpuError> {
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_error("reading the compute capability"))?;
    if (major, minor) != (9, 0) {
        return Err(GpuError(format!(
            "compute capability {major}.{minor}: the native engine's kernels use Hopper's wgmma (9.0) so far"
        )));
    }
    let sms = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(driver_error("reading the multiprocessor count"))?;
    Ok(sms.max(1) as u32)
}

/// The packing kernel and the packed map of one frame size.
pub(super) struct InputPacker {
    pack: CudaFunction,
    /// The packed input: `h x w x 16` halves (RGB, then zeros).
    pub(super) packed: CudaSlice<u16>,
    height: usize,
    width: usize,
}

impl InputPacker {
    /// Load the kernel (compute capability 9.0, checked by the caller) and allocate the
    /// packed map for frames of `height x width` on `stream`.
    pub(super) fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        (height, width): (usize, usize),
    ) -> Result<Self, GpuError> {
        let arch = nvrtc_arch(9, 0).unwrap_or("compute_90");
        let [pack] = load_module_functions(
            ctx,
            LAYOUT_SOURCE,
            "rave_layout.cu",
            arch,
            ["pack_rgb_nhwc16"],
        )?;
        let packed = stream
            .alloc_zeros::<u16>((height * width * PADDED_INPUT_CHANNELS).max(1))
            .map_err(driver_error("allocating a feature map"))?;
        Ok(Self {
            pack,
            packed,
            height,
            width,
        })
    }

    /// Queue the packing of `input` (planar f32 `[3][h][w]`) on `stream`.
    pub(super) fn pack(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &CudaView<'_, f32>,
    ) -> Result<(), GpuError> {
        let pixels = self.height * self.width;
        if input.len() < 3 * pixels {
            return Err(GpuError(format!(
                "the network input holds {} values, {}x{} RGB needs {}",
                input.len(),
                self.width,
                self.height,
                3 * pixels
            )));
        }
        let dims = [self.height, self.width].map(|d| i32::try_from(d).unwrap_or(i32::MAX));
        let cfg = LaunchConfig {
            grid_dim: ((pixels as u32).div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut args = stream.launch_builder(&self.pack);
        args.arg(input)
            .arg(&mut self.packed)
            .arg(&dims[0])
            .arg(&dims[1]);
        // SAFETY: pack_rgb_nhwc16(planar, packed, height, width): `input` holds 3 planes of
        // h x w floats (checked above) and `packed` h x w x 16 halves (allocated so in
        // `new`); both on `stream`'s context.
        unsafe { args.launch(cfg) }
            .map(|_| ())
            .map_err(driver_error("launching the input packing"))
    }
}
