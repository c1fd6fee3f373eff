//! `GpuContext`: one GPU's primary context (shared with FFmpeg's CUDA frames), the four
//! stage streams, pooled and accounted allocation, and the health snapshot.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError};

use super::buffer::{GpuBuffer, PoolHome};
use super::device_memory::DeviceMemoryWatch;
use super::health::HealthSnapshot;
use super::pool::{BucketPool, bucket_size};
use super::probe::probe_driver;
use super::vram::VramAccount;
use crate::error::{EngineError, Result};

/// Idle buffers kept per bucket size before returns are freed.
const MAX_IDLE_PER_BUCKET: usize = 16;

/// One stream per GPU stage, so their work overlaps.
#[derive(Debug)]
pub struct StageStreams {
    /// Decode (NVDEC output copies, uploads).
    pub decode: Arc<CudaStream>,
    /// Preprocess kernels.
    pub preprocess: Arc<CudaStream>,
    /// Inference.
    pub inference: Arc<CudaStream>,
    /// Postprocess kernels and the download for software encoders.
    pub encode: Arc<CudaStream>,
}

/// A GPU ready for RAVE's stages.
#[derive(Debug)]
pub struct GpuContext {
    cuda: Arc<CudaContext>,
    streams: StageStreams,
    home: Arc<PoolHome>,
    queues: Mutex<BTreeMap<String, usize>>,
    host_syncs: AtomicU64,
    /// The device's memory in use beyond what it was once this context existed.
    device_memory: DeviceMemoryWatch,
}

/// Map a CUDA driver error to `EngineError::Cuda`, prefixed with what was being done.
pub fn cuda_err(what: &str) -> impl Fn(DriverError) -> EngineError + '_ {
    move |e| EngineError::Cuda(format!("{what}: {e}"))
}

impl GpuContext {
    /// Open GPU `device` (its primary context) with no VRAM limit.
    pub fn new(device: usize) -> Result<Arc<Self>> {
        Self::with_vram_limit(device, None)
    }

    /// Open GPU `device`, refusing allocations that would hold more than `limit` bytes.
    pub fn with_vram_limit(device: usize, limit: Option<usize>) -> Result<Arc<Self>> {
        let count = probe_driver()?;
        if device >= count {
            return Err(EngineError::NoGpu(format!(
                "GPU {device} requested, but only {count} visible"
            )));
        }
        let cuda = CudaContext::new(super::stand_in::driver_ordinal(device))
            .map_err(cuda_err("creating the CUDA context"))?;
        let stream = || cuda.new_stream().map_err(cuda_err("creating a stream"));
        let streams = StageStreams {
            decode: stream()?,
            preprocess: stream()?,
            inference: stream()?,
            encode: stream()?,
        };
        Ok(Arc::new(Self {
            streams,
            home: Arc::new(PoolHome {
                pool: BucketPool::new(MAX_IDLE_PER_BUCKET),
                vram: VramAccount::new(limit),
            }),
            queues: Mutex::new(BTreeMap::new()),
            host_syncs: AtomicU64::new(0),
            device_memory: DeviceMemoryWatch::start(&cuda),
            cuda,
        }))
    }

    /// The underlying cudarc context (primary context of the device).
    pub fn cuda(&self) -> &Arc<CudaContext> {
        &self.cuda
    }

    /// The stage streams.
    pub fn streams(&self) -> &StageStreams {
        &self.streams
    }

    /// Allocate `bytes` outside the pool, counted in VRAM use; the owner calls `vram_dec`
    /// when it frees it (for long-lived buffers such as an output ring).
    pub fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        self.home.vram.reserve(bytes)?;
        self.streams
            .preprocess
            .alloc_zeros::<u8>(bytes)
            .inspect_err(|_| self.home.vram.release(bytes))
            .map_err(cuda_err("allocating device memory"))
    }

    /// Stop counting `bytes` freed by the owner of an `alloc` buffer.
    pub fn vram_dec(&self, bytes: usize) {
        self.home.vram.release(bytes);
    }

    /// A buffer of at least `bytes` from the pool, recycled when dropped.
    pub fn alloc_pooled(&self, bytes: usize) -> Result<GpuBuffer> {
        let bucket = bucket_size(bytes);
        if let Some(slice) = self.home.pool.take(bucket) {
            return Ok(GpuBuffer::new(slice, bucket, &self.home));
        }
        self.home.vram.reserve(bucket)?;
        // SAFETY: the contents are unspecified until a stage writes them; every user writes
        // before reading (kernels fill whole planes, copies fill whole buffers).
        let mut slice = unsafe { self.streams.preprocess.alloc::<u8>(bucket) }
            .inspect_err(|_| self.home.vram.release(bucket))
            .map_err(cuda_err("allocating device memory"))?;
        // The allocation is stream-ordered on the preprocess stream: record it as the
        // buffer's first write there, so a first use on another stream waits for it.
        drop(cudarc::driver::DevicePtrMut::device_ptr_mut(
            &mut slice,
            &self.streams.preprocess,
        ));
        Ok(GpuBuffer::new(slice, bucket, &self.home))
    }

    /// Free every idle pooled buffer (e.g. after a resolution change).
    pub fn trim_pool(&self) {
        for (bucket, slice) in self.home.pool.drain() {
            drop(slice);
            self.home.vram.release(bucket);
        }
    }

    /// Count `bytes` that something else allocated on RAVE's behalf (ONNX Runtime's arena,
    /// the native engine's feature maps) against the limit, for the rest of the context's
    /// life: the limit is then one budget for everything the run holds.
    pub fn reserve_external(&self, bytes: usize) -> Result<()> {
        self.home.vram.reserve(bytes)
    }

    /// The device's free memory now, as the driver says it.
    pub fn device_free(&self) -> Option<usize> {
        self.cuda.bind_to_thread().ok()?;
        cudarc::driver::result::mem_get_info()
            .ok()
            .map(|(free, _)| free)
    }

    /// The most device memory in use beyond what it was once this context existed (a sample
    /// taken now included).
    pub fn device_peak(&self) -> Option<usize> {
        self.sample_device_memory();
        self.device_memory.peak_above_start()
    }

    /// (current, peak) device bytes held by RAVE.
    pub fn vram_usage(&self) -> (usize, usize) {
        self.home.vram.usage()
    }

    /// Wait for all work on the device to finish.
    pub fn sync_all(&self) -> Result<()> {
        self.cuda.synchronize().map_err(cuda_err("synchronizing"))
    }

    /// Block the host until the work queued on `stream` is done, counted as one host
    /// synchronisation (the report gives them per frame; the stages order their work by
    /// events instead wherever the host need not read the result).
    pub fn host_sync(&self, stream: &CudaStream, what: &str) -> Result<()> {
        self.host_syncs.fetch_add(1, Ordering::Relaxed);
        stream.synchronize().map_err(cuda_err(what))
    }

    /// Count a host synchronisation that a CUDA call makes by itself (a copy from pageable
    /// memory waits for the stream's earlier work).
    pub fn count_host_sync(&self) {
        self.host_syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Host synchronisations made through [`GpuContext::host_sync`] so far.
    pub fn host_syncs(&self) -> u64 {
        self.host_syncs.load(Ordering::Relaxed)
    }

    /// Make `waiter` wait, on the GPU, for everything queued on `first` so far (an event
    /// recorded on `first`; the host does not block).
    pub fn order_after(&self, waiter: &CudaStream, first: &CudaStream) -> Result<()> {
        waiter.join(first).map_err(cuda_err("ordering two streams"))
    }

    /// Record an event on `stream` (for another stream to wait on).
    pub fn record(&self, stream: &CudaStream) -> Result<CudaEvent> {
        stream
            .record_event(None)
            .map_err(cuda_err("recording an event"))
    }

    /// Make `stream` wait for `event` without blocking the host.
    pub fn wait(&self, stream: &CudaStream, event: &CudaEvent) -> Result<()> {
        stream.wait(event).map_err(cuda_err("waiting on an event"))
    }

    /// Report how many frames wait in a named queue (shown in the health snapshot).
    pub fn set_queue_depth(&self, queue: &str, depth: usize) {
        self.queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(queue.to_owned(), depth);
    }

    /// Sample the device's memory in use (for the peak in [`GpuContext::health`]); the
    /// stages call it once a frame.
    pub fn sample_device_memory(&self) {
        self.device_memory.sample(&self.cuda);
    }

    /// The GPU side of the run right now.
    pub fn health(&self) -> HealthSnapshot {
        self.sample_device_memory();
        let queues = self
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        HealthSnapshot::new(
            self.home.vram.usage(),
            self.home.vram.limit(),
            self.home.pool.idle_bytes(),
            self.home.pool.stats(),
            self.home.pool.requests_since_miss(),
            queues,
        )
        .with_device_peak(self.device_memory.peak_above_start())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU this is an error, never a panic; with one, the pool recycles.
    #[test]
    fn opening_without_a_gpu_is_an_error_not_a_panic() {
        match GpuContext::new(0) {
            Err(e) => assert!(
                matches!(e, EngineError::NoGpu(_) | EngineError::Cuda(_)),
                "{e}"
            ),
            Ok(ctx) => assert!(ctx.vram_usage().0 == 0),
        }
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU"]
    fn gpu_pool_recycles_when_last_arc_drops_and_accounts_vram() {
        let ctx = GpuContext::with_vram_limit(0, Some(64 << 20)).unwrap();
        let a = Arc::new(ctx.alloc_pooled(3_110_400).unwrap());
        let bucket = a.capacity();
        assert_eq!(ctx.vram_usage().0, bucket);
        let a2 = a.clone();
        drop(a);
        assert_eq!(ctx.health().pool.recycles, 0, "still referenced");
        drop(a2);
        assert_eq!(ctx.health().pool.recycles, 1);
        let b = ctx.alloc_pooled(3_000_000).unwrap();
        assert_eq!(ctx.health().pool.hits, 1, "same bucket reused");
        drop(b);
        assert_eq!(ctx.vram_usage(), (bucket, bucket));
        assert_eq!(
            ctx.alloc_pooled(128 << 20).unwrap_err().kind(),
            "vram_limit"
        );
        let raw = ctx.alloc(1 << 20).unwrap();
        assert_eq!(ctx.vram_usage().0, bucket + (1 << 20));
        drop(raw);
        ctx.vram_dec(1 << 20);
        ctx.trim_pool();
        assert_eq!(ctx.vram_usage().0, 0);
        ctx.sync_all().unwrap();
    }
}
