//! Pixel formats and the device-resident texture that GPU stages pass along.

use std::sync::Arc;

use crate::gpu::GpuBuffer;

/// Pixel layouts RAVE moves between stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PixelFormat {
    /// 8-bit Y plane followed by interleaved UV at half resolution (NVDEC/NVENC native).
    Nv12,
    /// 16-bit containers holding 10-bit samples in the high bits, Y then interleaved UV.
    P010,
    /// Three planes Y, U, V; U and V at half width and height. 8- or 10-bit samples.
    Yuv420p,
    /// Planar RGB, one `f32` per sample, values in [0, 1].
    RgbPlanarF32,
    /// Planar RGB, one IEEE half per sample, values in [0, 1].
    RgbPlanarF16,
}

impl PixelFormat {
    /// Bytes per element of the format's widest plane.
    pub fn element_bytes(self) -> usize {
        match self {
            PixelFormat::Nv12 | PixelFormat::Yuv420p => 1,
            PixelFormat::P010 | PixelFormat::RgbPlanarF16 => 2,
            PixelFormat::RgbPlanarF32 => 4,
        }
    }

    /// Whether this is one of the planar RGB tensor formats models consume.
    pub fn is_rgb_planar(self) -> bool {
        matches!(self, PixelFormat::RgbPlanarF32 | PixelFormat::RgbPlanarF16)
    }
}

/// A frame resident in device memory. Cloning shares the allocation (the pool recycles it
/// when the last clone drops).
#[derive(Debug, Clone)]
pub struct GpuTexture {
    /// The device allocation holding all planes (recycled to the pool when the last clone
    /// drops).
    pub data: Arc<GpuBuffer>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes between the starts of two rows of the first plane.
    pub pitch: usize,
    /// Layout of the data.
    pub format: PixelFormat,
}

impl GpuTexture {
    /// The raw device address of the first byte, for binding to inference runtimes.
    ///
    /// # Safety
    /// As for [`GpuBuffer::device_addr`]: the caller orders every use of the address.
    pub unsafe fn device_ptr(&self) -> u64 {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.data.device_addr() }
    }
}
