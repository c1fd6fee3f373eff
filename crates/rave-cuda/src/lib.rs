//! Colour conversion between the YUV 4:2:0 frames codecs use and the planar RGB tensors
//! models consume. `reference` holds the plain Rust versions: the CPU path runs them and
//! every optimized kernel is tested against them. `gpu_kernels` holds the NVRTC-compiled
//! CUDA versions; `packing` the device surface layouts (NV12, P010, planar); `tile_kernels` the
//! device half of tiling (cutting tiles, blending them back).

pub mod coefficients;
pub mod gpu_kernels;
mod nvrtc_once;
pub mod packing;
pub mod quality;
pub mod reference;
pub mod tile_kernels;

pub use reference::{rgb_to_yuv420, yuv420_to_rgb};
