//! Upscaling backends: the model description they expose, [`Upscaler`] (the one synchronous,
//! batch-aware contract over host images or device textures, with interruption) that every
//! stage and wrapper uses, and the seed's async device contract [`UpscaleBackend`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde::Serialize;

use crate::batch::Batching;
use crate::error::{EngineError, Result};
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
    /// Smallest input (height, width) the model accepts. In JSON `min_input_size`,
    /// `[width, height]` as every size of the report.
    #[serde(rename = "min_input_size", serialize_with = "width_height")]
    pub min_input_hw: (u32, u32),
    /// Largest input (height, width) the model accepts (`u32::MAX` when dynamic). In JSON
    /// `max_input_size`, `[width, height]` with `null` for a side of any size.
    #[serde(rename = "max_input_size", serialize_with = "width_height_bounded")]
    pub max_input_hw: (u32, u32),
    /// Element type of the image tensors: `RgbPlanarF32` or `RgbPlanarF16`.
    pub tensor_format: PixelFormat,
    /// The batch size the model is fixed to, or `None` when its batch axis is dynamic.
    pub fixed_batch: Option<u32>,
    /// What the sides of its dynamic axes must be multiples of (1: any size): a model that
    /// folds pixels into channels (a pixel-unshuffle or space-to-depth stage, a window
    /// attention) takes only multiples of its block, and is given frames padded to one.
    pub side_multiple: u32,
}

/// A (height, width) as `[width, height]`, the order of the report's other sizes.
fn width_height<S: serde::Serializer>(hw: &(u32, u32), s: S) -> Result<S::Ok, S::Error> {
    [hw.1, hw.0].serialize(s)
}

/// A largest (height, width) as `[width, height]`, a side without a limit (`u32::MAX`) as
/// `null`.
fn width_height_bounded<S: serde::Serializer>(hw: &(u32, u32), s: S) -> Result<S::Ok, S::Error> {
    let bounded = |v: u32| (v != u32::MAX).then_some(v);
    [bounded(hw.1), bounded(hw.0)].serialize(s)
}

impl ModelMetadata {
    /// Whether the model takes inputs of `width` x `height`.
    pub fn accepts(&self, width: u32, height: u32) -> bool {
        (self.min_input_hw.0..=self.max_input_hw.0).contains(&height)
            && (self.min_input_hw.1..=self.max_input_hw.1).contains(&width)
            && self.fits_multiple(width, self.min_input_hw.1 == self.max_input_hw.1)
            && self.fits_multiple(height, self.min_input_hw.0 == self.max_input_hw.0)
    }

    /// Whether a side of `len` is one the model takes along an axis (`fixed` where that
    /// axis has one size, which the multiple does not apply to).
    fn fits_multiple(&self, len: u32, fixed: bool) -> bool {
        fixed || len.is_multiple_of(self.side_multiple.max(1))
    }

    /// What a tile's (width, height) must be multiples of: along a fixed axis its one size
    /// (a frame narrower than it is padded to it), along a dynamic one the side multiple.
    pub fn tile_multiples(&self) -> (u32, u32) {
        let m = self.side_multiple.max(1);
        let axis = |min: u32, max: u32| if min == max { max.max(1) } else { m };
        (
            axis(self.min_input_hw.1, self.max_input_hw.1),
            axis(self.min_input_hw.0, self.max_input_hw.0),
        )
    }

    /// `width` x `height` rounded up to [`ModelMetadata::tile_multiples`]: the input a frame
    /// of that size is padded to (a fixed side of at most its size becomes that size).
    pub fn padded_size(&self, width: u32, height: u32) -> (u32, u32) {
        let (mw, mh) = self.tile_multiples();
        (
            width.div_ceil(mw).saturating_mul(mw),
            height.div_ceil(mh).saturating_mul(mh),
        )
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

/// What runs a model, ready to upscale: frames of one kind (`RgbImage` for the CPU backend,
/// `GpuTexture` for the GPU ones), a micro-batch of one size at a time, from any thread, with
/// a handle that interrupts a call in flight. Wrappers (tiling) implement it over another
/// `Upscaler`, so whatever is written on it is written once for every engine.
pub trait Upscaler: Send + Sync {
    /// One frame: planar RGB in the model's tensor layout, on the host or the device.
    type Frame;
    /// The loaded model's description (`NotInitialized` for a backend whose two-step start,
    /// the seed's `initialize`, has not run).
    fn model(&self) -> Result<&ModelMetadata>;
    /// Short name of what runs the model, as the run report gives it (e.g.
    /// "onnxruntime-cpu").
    fn engine_name(&self) -> &str;
    /// How many frames one [`Upscaler::upscale`] call takes at most, and how long a stage may
    /// hold the first of them while it collects the rest.
    fn batching(&self) -> Batching;
    /// Upscale `frames`, all of one size and at most `batching().max_batch` of them; the
    /// results come back in input order, `scale` times larger. Host results are complete on
    /// return; device results are complete, or ordered by the events of their buffers before
    /// anything that reads them.
    fn upscale(&self, frames: &[Self::Frame]) -> Result<Vec<Self::Frame>>;
    /// A handle that makes an `upscale` in flight return early (with an error) from another
    /// thread, where the backend has one. It is for stopping the run: an interrupted backend
    /// may refuse every later call too.
    fn interrupter(&self) -> Option<Arc<dyn Interrupt>>;
}

/// Something that can stop a backend's in-flight work from another thread (used on Ctrl+C).
pub trait Interrupt: Send + Sync {
    /// Ask the in-flight call to return as soon as it can.
    fn interrupt(&self);
}

/// A boxed backend is the backend (the pipeline holds the CPU's as a trait object, which a
/// wrapper such as tiling then takes).
impl<U: Upscaler + ?Sized> Upscaler for Box<U> {
    type Frame = U::Frame;

    fn model(&self) -> Result<&ModelMetadata> {
        (**self).model()
    }

    fn engine_name(&self) -> &str {
        (**self).engine_name()
    }

    fn batching(&self) -> Batching {
        (**self).batching()
    }

    fn upscale(&self, frames: &[Self::Frame]) -> Result<Vec<Self::Frame>> {
        (**self).upscale(frames)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        (**self).interrupter()
    }
}

/// An [`Interrupt`] that raises a flag, for a backend that checks it between its own steps
/// (frames or tiles) rather than inside a runtime call.
#[derive(Debug, Default)]
pub struct InterruptFlag(AtomicBool);

impl InterruptFlag {
    /// Whether an interrupt was asked for.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// `Err(Cancelled)` once an interrupt was asked for, so a step can `?` it.
    pub fn check(&self) -> Result<()> {
        match self.raised() {
            true => Err(EngineError::Cancelled),
            false => Ok(()),
        }
    }
}

impl Interrupt for InterruptFlag {
    fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_flag_stops_the_next_step() {
        let flag = Arc::new(InterruptFlag::default());
        assert!(flag.check().is_ok());
        let handle: Arc<dyn Interrupt> = flag.clone();
        handle.interrupt();
        assert!(flag.raised());
        assert_eq!(
            flag.check().unwrap_err().kind(),
            EngineError::Cancelled.kind()
        );
    }
}
