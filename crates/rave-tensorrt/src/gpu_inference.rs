//! `GpuInference`: what the GPU pipeline needs of whatever runs the model on device frames,
//! so ONNX Runtime ([`crate::gpu_backend::TensorRtBackend`]) and RAVE's native engine plug
//! into the same stages.

use rave_core::backend::ModelMetadata;
use rave_core::block_on::block_on;
use rave_core::error::Result;
use rave_core::types::GpuTexture;

use crate::backend_report::GpuBackendReport;
use crate::gpu_backend::TensorRtBackend;
use rave_core::batch::Batching;

/// A backend that upscales device frames, initialized and ready.
pub trait GpuInference: Send + Sync {
    /// Upscale one frame; the result is complete when this returns (or ordered on the
    /// stream downstream work waits for).
    fn process_one(&self, input: GpuTexture) -> Result<GpuTexture>;
    /// Upscale a micro-batch of frames of one size, results in input order.
    fn process_many(&self, inputs: &[GpuTexture]) -> Result<Vec<GpuTexture>>;
    /// The micro-batching the stages should collect for.
    fn batching(&self) -> Batching;
    /// The loaded model's description.
    fn model(&self) -> Result<&ModelMetadata>;
    /// Release the runtime.
    fn close(&self) -> Result<()>;
    /// Everything the backend counted, for the run report.
    fn counters(&self) -> GpuBackendReport;
    /// For a backend that returns before the GPU is done (its outputs ordered by events):
    /// the GPU time of each frame whose inference has finished since the last call, oldest
    /// first (with `wait`, of every queued frame, waiting for them). `None` for a backend
    /// whose run is synchronous: the time around `process_one` is then its time.
    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<std::time::Duration>>> {
        let _ = wait;
        Ok(None)
    }
}

impl GpuInference for TensorRtBackend {
    fn process_one(&self, input: GpuTexture) -> Result<GpuTexture> {
        block_on(rave_core::backend::UpscaleBackend::process(self, input))
    }

    fn process_many(&self, inputs: &[GpuTexture]) -> Result<Vec<GpuTexture>> {
        self.process_batch(inputs)
    }

    fn batching(&self) -> Batching {
        self.batch_config()
    }

    fn model(&self) -> Result<&ModelMetadata> {
        rave_core::backend::UpscaleBackend::metadata(self)
    }

    fn close(&self) -> Result<()> {
        block_on(rave_core::backend::UpscaleBackend::shutdown(self))
    }

    fn counters(&self) -> GpuBackendReport {
        self.report()
    }

    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<std::time::Duration>>> {
        self.async_gpu_times(wait)
    }
}
