//! The CPU backend: runs the model on ONNX Runtime's CPU execution provider, one frame per
//! call, reading the host image in place and copying the output tensor out.

use std::path::Path;
use std::sync::Arc;

use ort::session::{RunOptions, Session};
use ort::value::TensorRef;
use rave_core::backend::{HostUpscaleBackend, Interrupt, ModelMetadata};
use rave_core::error::{EngineError, Result};
use rave_core::frame::RgbImage;

use crate::model::{LoadedModel, ModelOptions};
use crate::runtime::OrtRuntime;

/// Upscales host images with ONNX Runtime on the CPU.
pub struct CpuBackend {
    session: Session,
    metadata: ModelMetadata,
    run_options: Arc<RunOptions>,
}

struct RunTerminator(Arc<RunOptions>);

impl Interrupt for RunTerminator {
    fn interrupt(&self) {
        // Failure only means ORT refused the flag; the run then ends on its own.
        let _ = self.0.terminate();
    }
}

impl CpuBackend {
    /// Load `model` and check it is a usable image-to-image model that takes one frame at a
    /// time (a batch axis fixed above 1 could only fail at the first frame).
    pub fn new(runtime: &OrtRuntime, model: &Path, options: &ModelOptions) -> Result<Self> {
        let loaded = LoadedModel::load_cpu(runtime, model, options)?;
        if let Some(fixed) = loaded.metadata.fixed_batch.filter(|b| *b != 1) {
            return Err(EngineError::ModelMetadata(format!(
                "{}: the model's batch size is fixed at {fixed}; the CPU backend runs one frame at a time (use a model with batch 1 or a dynamic batch axis, or the GPU with --max-batch {fixed})",
                model.display()
            )));
        }
        let run_options = RunOptions::new().map_err(|e| EngineError::Inference(e.to_string()))?;
        Ok(Self {
            session: loaded.session,
            metadata: loaded.metadata,
            run_options: Arc::new(run_options),
        })
    }
}

impl HostUpscaleBackend for CpuBackend {
    fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    fn process(&mut self, input: &RgbImage) -> Result<RgbImage> {
        let (w, h) = (input.width as usize, input.height as usize);
        if !self.metadata.accepts(input.width, input.height) {
            return Err(EngineError::DimensionMismatch(format!(
                "model {} takes {:?}..{:?} (HxW), frame is {h}x{w}",
                self.metadata.name, self.metadata.min_input_hw, self.metadata.max_input_hw
            )));
        }
        let tensor = TensorRef::from_array_view(([1usize, 3, h, w], &input.data[..]))
            .map_err(|e| EngineError::Inference(e.to_string()))?;
        let outputs = self
            .session
            .run_with_options(
                ort::inputs![self.metadata.input_name.as_str() => tensor],
                &*self.run_options,
            )
            .map_err(|e| EngineError::Inference(e.to_string()))?;
        let (shape, data) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| EngineError::Inference(e.to_string()))?;
        let s = self.metadata.scale as usize;
        if shape[..] != [1, 3, (h * s) as i64, (w * s) as i64] {
            return Err(EngineError::DimensionMismatch(format!(
                "model output {:?} for a {w}x{h} input, expected scale {s}",
                &shape[..]
            )));
        }
        RgbImage::new(
            input.width * s as u32,
            input.height * s as u32,
            data.to_vec(),
        )
    }

    fn backend_name(&self) -> &'static str {
        "onnxruntime-cpu"
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        Some(Arc::new(RunTerminator(self.run_options.clone())))
    }
}
