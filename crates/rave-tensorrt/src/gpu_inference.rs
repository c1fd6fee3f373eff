//! `GpuInference`: the [`Upscaler`] on device frames plus what only the GPU path has (its
//! counters for the report, GPU times read from timing events, an explicit close), so ONNX
//! Runtime ([`crate::gpu_backend::TensorRtBackend`]) and RAVE's native engine plug into the
//! same stages. The frame path, batching and interruption are the [`Upscaler`]'s.

use std::sync::Arc;
use std::time::Duration;

use rave_core::backend::{Interrupt, ModelMetadata, UpscaleBackend, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::Result;
use rave_core::types::GpuTexture;

use crate::backend_report::GpuBackendReport;
use crate::gpu_backend::TensorRtBackend;
use crate::provider_paths::ProviderKind;

/// A backend that upscales device frames, initialized and ready.
pub trait GpuInference: Upscaler<Frame = GpuTexture> {
    /// Release the runtime (its counters stay readable).
    fn close(&self) -> Result<()>;
    /// Everything the backend counted, for the run report.
    fn counters(&self) -> GpuBackendReport;
    /// For a backend that returns before the GPU is done (its outputs ordered by events):
    /// the GPU time of each frame whose inference has finished since the last call, oldest
    /// first (with `wait`, of every queued frame, waiting for them). `None` for a backend
    /// whose run is synchronous: the time around `upscale` is then its time.
    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<Duration>>> {
        let _ = wait;
        Ok(None)
    }
}

/// ONNX Runtime on the GPU: a lone frame takes the zero-copy path (the seed's `process`), a
/// micro-batch one staged run; runs are interrupted through the terminate flag of their run
/// options (between the graph's nodes; TensorRT runs the whole graph as one).
impl Upscaler for TensorRtBackend {
    type Frame = GpuTexture;

    fn model(&self) -> Result<&ModelMetadata> {
        UpscaleBackend::metadata(self)
    }

    fn engine_name(&self) -> &str {
        match self.selected_provider() {
            Some(ProviderKind::TensorRt) => "onnxruntime-tensorrt",
            Some(ProviderKind::Cuda) => "onnxruntime-cuda",
            None => "onnxruntime-gpu (not initialized)",
        }
    }

    fn batching(&self) -> Batching {
        self.batching_config()
    }

    fn upscale(&self, frames: &[GpuTexture]) -> Result<Vec<GpuTexture>> {
        match frames {
            [] => Ok(Vec::new()),
            [one] => Ok(vec![self.process_frame(one.clone())?]),
            many => self.process_batch(many),
        }
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        self.run_interrupter()
    }
}

impl GpuInference for TensorRtBackend {
    fn close(&self) -> Result<()> {
        self.close_session()
    }

    fn counters(&self) -> GpuBackendReport {
        self.report()
    }

    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<Duration>>> {
        self.async_gpu_times(wait)
    }
}
