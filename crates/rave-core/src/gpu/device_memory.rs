//! How much of the GPU's memory the process has taken since its context was made: the
//! driver's free/total (cuMemGetInfo) sampled during the run, against the amount in use
//! right after the context existed. Unlike RAVE's own account (`VramAccount`) this sees
//! everything — ONNX Runtime's arena, cuDNN's workspaces, NVDEC's surfaces, the kernels'
//! modules — but also any other process's allocations on the same GPU meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::CudaContext;

/// Device memory in use when the watch started, and the most seen since.
#[derive(Debug)]
pub struct DeviceMemoryWatch {
    baseline: Option<usize>,
    peak: AtomicUsize,
}

/// Bytes in use on `cuda`'s device now (total - free), if the driver says.
fn used(cuda: &CudaContext) -> Option<usize> {
    cuda.bind_to_thread().ok()?;
    let (free, total) = cudarc::driver::result::mem_get_info().ok()?;
    Some(total.saturating_sub(free))
}

impl DeviceMemoryWatch {
    /// Start watching `cuda`'s device from what is in use now.
    pub fn start(cuda: &CudaContext) -> Self {
        let baseline = used(cuda);
        Self {
            baseline,
            peak: AtomicUsize::new(baseline.unwrap_or(0)),
        }
    }

    /// Take a sample (a driver call of a few microseconds).
    pub fn sample(&self, cuda: &CudaContext) {
        if let Some(now) = used(cuda) {
            self.peak.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// The most device memory in use beyond the start, over the samples so far.
    pub fn peak_above_start(&self) -> Option<usize> {
        self.baseline
            .map(|b| self.peak.load(Ordering::Relaxed).saturating_sub(b))
    }
}
