//! The CPU backend: the model on ONNX Runtime's CPU execution provider behind the
//! [`Upscaler`] contract. A micro-batch is one run where the model's batch axis is dynamic (a
//! model fixed at batch 1 takes one frame a call); a lone frame is read in place, a batch
//! copied into one tensor; the output tensor is copied out. Interrupted through the run
//! options' terminate flag.

use std::path::Path;
use std::sync::{Arc, Mutex};

use ort::session::{RunOptions, Session};
use ort::value::TensorRef;
use rave_core::backend::{Interrupt, ModelMetadata, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::{EngineError, Result};
use rave_core::frame::RgbImage;

use crate::model::{LoadedModel, ModelOptions};
use crate::run_terminator::RunTerminator;
use crate::runtime::OrtRuntime;

/// Upscales host images with ONNX Runtime on the CPU.
pub struct CpuBackend {
    /// ONNX Runtime's run needs the session exclusively.
    session: Mutex<Session>,
    metadata: ModelMetadata,
    batching: Batching,
    run_options: Arc<RunOptions>,
}

fn ort_error(e: ort::Error) -> EngineError {
    EngineError::Inference(e.to_string())
}

impl CpuBackend {
    /// Load `model` and check it is a usable image-to-image model whose batch axis is 1 or
    /// dynamic (a batch fixed above 1 could only fail at the first frame). It takes one frame
    /// a call until [`CpuBackend::with_batching`] says otherwise.
    pub fn new(runtime: &OrtRuntime, model: &Path, options: &ModelOptions) -> Result<Self> {
        let loaded = LoadedModel::load_cpu(runtime, model, options)?;
        if let Some(fixed) = loaded.metadata.fixed_batch.filter(|b| *b != 1) {
            return Err(EngineError::ModelMetadata(format!(
                "{}: the model's batch size is fixed at {fixed}; the CPU backend runs one frame at a time (use a model with batch 1 or a dynamic batch axis, or the GPU with --max-batch {fixed})",
                model.display()
            )));
        }
        let run_options = RunOptions::new().map_err(ort_error)?;
        Ok(Self {
            session: Mutex::new(loaded.session),
            metadata: loaded.metadata,
            batching: Batching::default(),
            run_options: Arc::new(run_options),
        })
    }

    /// Take up to `batching.max_batch` frames a call, run as one batch. A model whose batch
    /// axis is fixed at 1 keeps taking one frame a call (its `batching()` says so).
    pub fn with_batching(mut self, batching: Batching) -> Result<Self> {
        if batching.max_batch == 0 {
            return Err(EngineError::Config(
                "a batch holds at least one frame".into(),
            ));
        }
        let max_batch = match self.metadata.fixed_batch {
            Some(1) => 1,
            _ => batching.max_batch,
        };
        self.batching = Batching {
            max_batch,
            ..batching
        };
        Ok(self)
    }

    /// Run `frames` (one size, checked against the model) as one batch.
    fn run(&self, frames: &[RgbImage]) -> Result<Vec<RgbImage>> {
        let Some(first) = frames.first() else {
            return Ok(Vec::new());
        };
        let (w, h, n) = (first.width, first.height, frames.len());
        if let Some(other) = frames.iter().find(|f| (f.width, f.height) != (w, h)) {
            return Err(EngineError::DimensionMismatch(format!(
                "one batch holds {w}x{h} and {}x{} frames",
                other.width, other.height
            )));
        }
        if !self.metadata.accepts(w, h) {
            return Err(EngineError::DimensionMismatch(format!(
                "model {} takes {:?}..{:?} (HxW), frame is {h}x{w}",
                self.metadata.name, self.metadata.min_input_hw, self.metadata.max_input_hw
            )));
        }
        let (wu, hu) = (w as usize, h as usize);
        // A lone frame is read in place; a batch needs one contiguous tensor.
        let joined: Vec<f32>;
        let data: &[f32] = if n == 1 {
            &first.data
        } else {
            joined = frames.iter().flat_map(|f| f.data.iter().copied()).collect();
            &joined
        };
        let tensor = TensorRef::from_array_view(([n, 3, hu, wu], data)).map_err(ort_error)?;
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = session
            .run_with_options(
                ort::inputs![self.metadata.input_name.as_str() => tensor],
                &*self.run_options,
            )
            .map_err(|e| {
                // Which model and which frame size: a model that takes only some sizes
                // fails here on the first frame, with ONNX Runtime's words alone.
                // "Inputs": frames, or the tiles of one (the tiling says which).
                let what = match n {
                    1 => format!("one {w}x{h} input"),
                    n => format!("a batch of {n} {w}x{h} inputs"),
                };
                EngineError::Inference(format!(
                    "model {} on {what}: {}",
                    self.metadata.name,
                    crate::ort_message::first_line(&e.to_string())
                ))
            })?;
        let (shape, out) = outputs[0].try_extract_tensor::<f32>().map_err(ort_error)?;
        let s = self.metadata.scale;
        let (ow, oh) = (w * s, h * s);
        if shape[..] != [n as i64, 3, i64::from(oh), i64::from(ow)] {
            // The model, not RAVE: its output is not its input scaled by the factor its
            // probe frame gave (it pads, crops, resizes to a fixed size, or drops frames of
            // a batch).
            return Err(EngineError::ModelMetadata(format!(
                "model {}: its output is {:?} for an input of [{n}, 3, {h}, {w}], not [{n}, 3, {oh}, {ow}] (x{s}, as measured on a probe frame); RAVE needs a model whose output is its input scaled by one whole factor at every size and batch",
                self.metadata.name,
                &shape[..]
            )));
        }
        out.chunks_exact(3 * ow as usize * oh as usize)
            .map(|one| RgbImage::new(ow, oh, one.to_vec()))
            .collect()
    }
}

impl Upscaler for CpuBackend {
    type Frame = RgbImage;

    fn model(&self) -> Result<&ModelMetadata> {
        Ok(&self.metadata)
    }

    fn engine_name(&self) -> &str {
        "onnxruntime-cpu"
    }

    fn batching(&self) -> Batching {
        self.batching
    }

    fn upscale(&self, frames: &[RgbImage]) -> Result<Vec<RgbImage>> {
        self.batching.admits(frames.len())?;
        self.run(frames)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        Some(Arc::new(RunTerminator(vec![self.run_options.clone()])))
    }
}
