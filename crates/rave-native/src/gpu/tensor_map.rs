//! Tensor maps (the Hopper tensor-copy descriptors) of the streamed kernels' NHWC sources.

use cudarc::driver::DeviceRepr;
use cudarc::driver::sys::{
    CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle, cuTensorMapEncodeTiled,
};

use super::GpuError;

/// Channels of a k-step: the box's inner extent (32 bytes, the swizzle's span).
const BOX_CHANNELS: u32 = 16;

/// A source map as the `_tma` kernels read it: a CUtensorMap passed by value.
#[repr(transparent)]
pub(crate) struct SourceTensorMap(CUtensorMap);

// SAFETY: CUtensorMap is plain data (128 bytes, 128-aligned) that the driver copies into
// the kernel's `const __grid_constant__ TensorMap` parameter of the same size.
unsafe impl DeviceRepr for SourceTensorMap {}

/// The tensor map of an NHWC half map at `address`: `stride` channels a pixel, `width x
/// height` pixels, read in boxes of 16 channels x `box_columns` x `box_rows`, 32-byte
/// swizzled in shared memory, zeros outside the map.
///
/// # Safety
/// `address` must be the start of a device buffer of at least `stride * width * height`
/// halves that stays alive (and on this context) while kernels using the map run.
pub(crate) unsafe fn nhwc_source_map(
    address: u64,
    stride: usize,
    (height, width): (usize, usize),
    (box_rows, box_columns): (u32, u32),
) -> Result<SourceTensorMap, GpuError> {
    let dims = [stride as u64, width as u64, height as u64];
    let strides = [2 * stride as u64, 2 * (stride * width) as u64];
    let boxes = [BOX_CHANNELS, box_columns, box_rows];
    let steps = [1u32; 3];
    let mut map = std::mem::MaybeUninit::<CUtensorMap>::uninit();
    // SAFETY: every pointer is to a live local of the length the rank (3) asks: 3 sizes,
    // 2 strides (the innermost dimension is dense), 3 box extents and 3 element steps;
    // the driver writes only the 128 bytes of `map`. It does not dereference `address`.
    let status = unsafe {
        cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            3,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            steps.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    status.result().map_err(|e| {
        GpuError(format!(
            "describing a {width}x{height} map of {stride} channels for tensor copies: {e}"
        ))
    })?;
    // SAFETY: the call succeeded, so the driver wrote the whole map.
    Ok(SourceTensorMap(unsafe { map.assume_init() }))
}
