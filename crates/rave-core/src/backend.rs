//! Upscaling backends: the model description they expose and the two frame paths, device
//! textures (`UpscaleBackend`, the GPU contract) and host images (`HostUpscaleBackend`).

use async_trait::async_trait;
use serde::Serialize;

use crate::error::Result;
use crate::frame::RgbImage;
use crate::types::{GpuTexture, PixelFormat};

/// What RAVE knows about a loaded super-resolution model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelMetadata {
    /// Human-readable model name (file stem or graph name).
    pub name: String,
    /// Integer upscale factor, from the tensor shapes or a probe run.
    pub scale: u32,
    /// Name of the image input tensor.
    pub input_name: String,
    /// Name of the image output tensor.
    pub output_name: String,
    /// Channels the model takes (3 for RGB).
    pub input_channels: u32,
    /// Smallest input (height, width) the model accepts.
    pub min_input_hw: (u32, u32),
    /// Largest input (height, width) the model accepts (`u32::MAX` when dynamic).
    pub max_input_hw: (u32, u32),
    /// Element type of the image tensors: `RgbPlanarF32` or `RgbPlanarF16`.
    pub tensor_format: PixelFormat,
    /// The batch size the model is fixed to, or `None` when its batch axis is dynamic.
    pub fixed_batch: Option<u32>,
}

impl ModelMetadata {
    /// Whether the model takes inputs of `width` x `height`.
    pub fn accepts(&self, width: u32, height: u32) -> bool {
        (self.min_input_hw.0..=self.max_input_hw.0).contains(&height)
            && (self.min_input_hw.1..=self.max_input_hw.1).contains(&width)
    }
}

/// A backend that upscales frames resident in device memory (implemented by the TensorRT/CUDA
/// backend). `process` takes planar RGB F32/F16 and returns the upscaled texture.
#[async_trait]
pub trait UpscaleBackend: Send + Sync {
    /// Load the model and prepare the runtime. Called once before `process`.
    async fn initialize(&self) -> Result<()>;
    /// Upscale one frame.
    async fn process(&self, input: GpuTexture) -> Result<GpuTexture>;
    /// Release the runtime, reporting final metrics.
    async fn shutdown(&self) -> Result<()>;
    /// The loaded model's description (after `initialize`).
    fn metadata(&self) -> Result<&ModelMetadata>;
}

/// A backend that upscales images in host memory (the CPU path).
pub trait HostUpscaleBackend: Send {
    /// The loaded model's description.
    fn metadata(&self) -> &ModelMetadata;
    /// Upscale one image; the result is `scale` times larger in each dimension.
    fn process(&mut self, input: &RgbImage) -> Result<RgbImage>;
    /// Short name of what runs the model (e.g. "onnxruntime-cpu").
    fn backend_name(&self) -> &'static str;
    /// A handle that interrupts `process` from another thread, where the backend has one.
    fn interrupter(&self) -> Option<std::sync::Arc<dyn Interrupt>> {
        None
    }
}

/// Something that can stop a backend's in-flight work from another thread (used on Ctrl+C).
pub trait Interrupt: Send + Sync {
    /// Ask the in-flight call to return as soon as it can.
    fn interrupt(&self);
}
