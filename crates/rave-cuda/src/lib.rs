//! Colour conversion between the YUV 4:2:0 frames codecs use and the planar RGB tensors
//! models consume. `reference` holds the plain Rust versions: the CPU path runs them and
//! every optimized kernel is tested against them.

pub mod coefficients;
pub mod quality;
pub mod reference;

pub use reference::{rgb_to_yuv420, yuv420_to_rgb};
