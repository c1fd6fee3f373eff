//! Running frames through the session: fitting the ring and staging buffers to the frame
//! size, binding (the texture in place at batch 1; the staging pair for micro-batches and
//! CUDA graphs), the pointer audit, the warm-up at initialization.

use std::sync::Arc;
use std::time::Instant;

use rave_core::backend::ModelMetadata;
use rave_core::error::{EngineError, Result};
use rave_core::gpu::{GpuBuffer, cuda_err};
use rave_core::types::GpuTexture;
use tracing::warn;

use super::{MAX_BATCH, Staging, State, TensorRtBackend};
use crate::device_binding::Nchw;
use crate::output_ring::OutputRing;

/// Queue a device-to-device copy of `bytes` on `stream`.
///
/// # Safety
///
/// `dst` and `src` must be live device allocations of `stream`'s context holding at least
/// `bytes` each, alive until the stream has run the copy.
unsafe fn copy_on(
    stream: &cudarc::driver::CudaStream,
    dst: u64,
    src: u64,
    bytes: usize,
) -> Result<()> {
    // SAFETY: this function's contract.
    unsafe { cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
        .map_err(cuda_err("device copy"))
}

impl TensorRtBackend {
    /// A mismatch between a bound address and the one the runtime used: a warning and a
    /// count, or (feature `strict-no-host-copies`) an error.
    fn audit(&self, what: &str, bound: u64, used: u64) -> Result<()> {
        if bound == used {
            return Ok(());
        }
        self.counters.audit_mismatch();
        let message = format!(
            "pointer audit: ONNX Runtime used {used:#x} for the {what}, not the bound {bound:#x} (a hidden copy)"
        );
        if cfg!(feature = "strict-no-host-copies") {
            return Err(EngineError::InvariantViolation(message));
        }
        warn!("{message}");
        Ok(())
    }

    /// Make the ring (and staging) fit frames of `w` x `h`; returns whether anything was
    /// allocated (that call is not held to the no-allocation rule).
    fn fit_buffers(
        &self,
        state: &mut State,
        w: u32,
        h: u32,
        n_bytes: (usize, usize),
    ) -> Result<bool> {
        let (in_bytes, out_bytes) = n_bytes;
        let ctx = &self.ctx;
        let allocate = |bytes: usize| ctx.alloc(bytes).map(GpuBuffer::unpooled);
        let mut changed = false;
        match &mut state.ring {
            Some(ring) if ring.needs_realloc((w, h)) => {
                let freed = ring.reallocate((w, h), out_bytes, allocate)?;
                ctx.vram_dec(freed);
                changed = true;
            }
            Some(_) => {}
            None => {
                state.ring = Some(OutputRing::new(
                    self.config.ring_size,
                    self.config.min_ring_slots() - 2,
                    (w, h),
                    out_bytes,
                    allocate,
                )?);
                changed = true;
            }
        }
        if self.config.staged() && state.staging.as_ref().map(|s| s.dims) != Some((w, h)) {
            if state.staging.is_some() && self.config.cuda_graph {
                return Err(EngineError::DimensionMismatch(format!(
                    "the frame size changed to {w}x{h} mid-stream; CUDA graphs are captured for one size (run without --cuda-graph)"
                )));
            }
            let n = self.config.batch.max_batch;
            state.staging = Some(Staging {
                input: ctx.alloc_pooled(in_bytes * n)?,
                output: ctx.alloc_pooled(out_bytes * n)?,
                dims: (w, h),
            });
            changed = true;
        }
        Ok(changed)
    }

    /// Run `inputs` (one frame, or one micro-batch) and hand each result to `sink` in order.
    /// Returns whether buffers were (re)allocated on this call.
    pub(super) fn infer_frames(
        &self,
        inputs: &[GpuTexture],
        sink: &mut dyn FnMut(GpuTexture),
    ) -> Result<bool> {
        let meta = self.meta.get().ok_or(EngineError::NotInitialized)?;
        let Some(first) = inputs.first() else {
            return Ok(false);
        };
        let (w, h, s, n) = (first.width, first.height, meta.scale, inputs.len());
        if n > self.config.batch.max_batch {
            return Err(EngineError::Config(format!(
                "a batch of {n} frames exceeds --max-batch {}",
                self.config.batch.max_batch
            )));
        }
        for t in inputs {
            if t.format != meta.tensor_format {
                return Err(EngineError::FormatMismatch {
                    expected: meta.tensor_format,
                    actual: t.format,
                });
            }
            if (t.width, t.height) != (w, h) {
                return Err(EngineError::DimensionMismatch(format!(
                    "one batch holds {w}x{h} and {}x{} frames",
                    t.width, t.height
                )));
            }
        }
        if !meta.accepts(w, h) {
            return Err(EngineError::DimensionMismatch(format!(
                "model {} does not take {w}x{h}",
                meta.name
            )));
        }
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = guard.as_mut().ok_or(EngineError::NotInitialized)?;
        let one_in: Nchw = [1, 3, i64::from(h), i64::from(w)];
        let one_out: Nchw = [1, 3, i64::from(h * s), i64::from(w * s)];
        let (in_bytes, out_bytes) = (state.binding.bytes(&one_in), state.binding.bytes(&one_out));
        for t in inputs {
            if t.data.capacity() < in_bytes {
                return Err(EngineError::BufferTooSmall {
                    required: in_bytes,
                    available: t.data.capacity(),
                });
            }
        }
        let asynchronous = self.runs_asynchronously(state);
        if !asynchronous {
            // The preprocess work that wrote the inputs (queued on the preprocess stream)
            // must be done before the runtime, which takes raw addresses, reads them.
            self.ctx
                .host_sync(&self.ctx.streams().preprocess, "input sync")?;
        }
        let changed = self.fit_buffers(state, w, h, (in_bytes, out_bytes))?;
        let t0 = Instant::now();
        let State {
            session,
            binding,
            ring,
            staging,
        } = state;
        let ring = ring.as_mut().expect("fit_buffers made the ring");
        // An output slot as the upscaled frame's texture.
        let upscaled = |data: Arc<GpuBuffer>| GpuTexture {
            data,
            width: w * s,
            height: h * s,
            pitch: (w * s) as usize * meta.tensor_format.element_bytes(),
            format: meta.tensor_format,
        };
        match staging {
            None if asynchronous => {
                // The CUDA provider queues on the inference stream and the run does not
                // synchronize: the buffers' events order it. Taking the input and the slot
                // on that stream makes it wait for the input's writer and the slot's last
                // reader; the guards, dropped after the run is queued, record the input's
                // read and the slot's write there for whoever comes next.
                let stream = &self.ctx.streams().inference;
                let (in_ptr, _read) = cudarc::driver::DevicePtr::device_ptr(&**first.data, stream);
                let started = self.timer.start(stream)?;
                let slot = ring.acquire_with(|slot| {
                    let (out_ptr, _written) =
                        cudarc::driver::DevicePtrMut::device_ptr_mut(slot.slice_mut(), stream);
                    // SAFETY: the texture's buffer holds `in_bytes` (checked above) and the
                    // ring slot, held only here, `out_bytes`; the run is queued on `stream`
                    // after their earlier users, and later users wait for the events the
                    // guards record after it.
                    let used =
                        unsafe { binding.run(session, in_ptr, &one_in, out_ptr, &one_out, 0) }?;
                    self.audit("output", out_ptr, used)
                })?;
                self.timer.end(stream, started)?;
                sink(upscaled(slot));
            }
            None => {
                // The slot's last reader (the postprocess kernel, which the host need not
                // have waited for: NVENC) must be done before a runtime on its own stream
                // rewrites it: the inference stream waits for it, and the host for that.
                let stream = &self.ctx.streams().inference;
                let slot = ring.acquire_with(|slot| {
                    let _ = cudarc::driver::DevicePtrMut::device_ptr_mut(slot.slice_mut(), stream);
                    self.ctx.host_sync(stream, "output slot sync")
                })?;
                // SAFETY: the addresses are used only by the synchronous run below: after the
                // input was written (the preprocess stream was synchronized above) and the
                // slot's last reader finished (above), while the ring slot is held here.
                let (in_ptr, out_ptr) = unsafe { (first.device_ptr(), slot.device_addr()) };
                // SAFETY: the texture's buffer holds `in_bytes` (checked above) and the ring
                // slot, held only here, was allocated for `out_bytes`; both are device
                // memory of this context and outlive the synchronous run.
                let used = unsafe { binding.run(session, in_ptr, &one_in, out_ptr, &one_out, 0) }?;
                // A run on the provider's own stream synchronizes it at its end.
                if !binding.is_asynchronous() {
                    self.ctx.count_host_sync();
                }
                self.audit("output", out_ptr, used)?;
                self.record(t0.elapsed());
                sink(upscaled(slot));
            }
            Some(stage) => {
                let stream = &self.ctx.streams().inference;
                // SAFETY: the staging pair is this backend's own, used only below, in order on
                // the inference stream and by the synchronous run, with syncs between.
                let (stage_in, stage_out) =
                    unsafe { (stage.input.device_addr(), stage.output.device_addr()) };
                for (i, t) in inputs.iter().enumerate() {
                    // SAFETY: the staging input holds `max_batch` frames of `in_bytes`
                    // (`fit_buffers`; n <= max_batch checked above) and each texture holds
                    // `in_bytes` (checked above); all stay alive past the sync below.
                    unsafe {
                        copy_on(
                            stream,
                            stage_in + (i * in_bytes) as u64,
                            t.device_ptr(),
                            in_bytes,
                        )
                    }?;
                }
                self.ctx.host_sync(stream, "staging sync")?;
                let mut shape_in = one_in;
                let mut shape_out = one_out;
                (shape_in[0], shape_out[0]) = (n as i64, n as i64);
                let graph = if self.config.cuda_graph { n } else { 0 };
                // SAFETY: the staging pair was allocated for `max_batch` frames of these
                // sizes (`fit_buffers`), and only this backend uses it.
                let used = unsafe {
                    binding.run(session, stage_in, &shape_in, stage_out, &shape_out, graph)
                }?;
                // A run on RAVE's stream is ordered there (the copies below follow it); one
                // on the provider's own stream synchronized it at its end.
                if !binding.is_asynchronous() {
                    self.ctx.count_host_sync();
                }
                self.audit("output", stage_out, used)?;
                let mut slots: [Option<Arc<GpuBuffer>>; MAX_BATCH] = Default::default();
                for (i, slot) in slots.iter_mut().take(n).enumerate() {
                    // Taken on the inference stream, the slot orders the copy after its last
                    // reader and records the copy as its writer.
                    let buf = ring.acquire_with(|buf| {
                        let (addr, _written) =
                            cudarc::driver::DevicePtrMut::device_ptr_mut(buf.slice_mut(), stream);
                        // SAFETY: ring slots hold `out_bytes` and the staging output
                        // `max_batch` of them; both stay alive past the sync below.
                        unsafe {
                            copy_on(stream, addr, stage_out + (i * out_bytes) as u64, out_bytes)
                        }
                    })?;
                    *slot = Some(buf);
                }
                self.ctx.host_sync(stream, "staging sync")?;
                self.counters.batch(n);
                let per_frame = t0.elapsed() / n as u32;
                for slot in slots.iter_mut().take(n) {
                    self.record(per_frame);
                    sink(GpuTexture {
                        data: slot.take().expect("filled above"),
                        width: w * s,
                        height: h * s,
                        pitch: (w * s) as usize * meta.tensor_format.element_bytes(),
                        format: meta.tensor_format,
                    });
                }
            }
        }
        Ok(changed)
    }

    /// Whether a frame's run is queued on the inference stream without synchronizing (the
    /// CUDA provider given RAVE's stream, one frame a run, no staging copies); the GPU
    /// times are then read from timing events.
    pub(super) fn runs_asynchronously(&self, state: &State) -> bool {
        state.binding.is_asynchronous() && !self.config.staged()
    }

    /// The GPU times of the frames whose asynchronous runs have finished (all, with `wait`),
    /// recorded in the backend's metrics; `None` when runs synchronize (their host time is
    /// recorded as they return).
    pub(crate) fn async_gpu_times(&self, wait: bool) -> Result<Option<Vec<std::time::Duration>>> {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !guard.as_ref().is_some_and(|s| self.runs_asynchronously(s)) {
            return Ok(None);
        }
        drop(guard);
        let times = self.timer.finished(wait)?;
        times.iter().for_each(|t| self.record(*t));
        Ok(Some(times))
    }

    fn record(&self, busy: std::time::Duration) {
        if !self.warming.load(std::sync::atomic::Ordering::Relaxed) {
            self.metrics.record(busy);
        }
    }

    /// Run zero frames of the clip's size twice (and a full batch when batching), so the
    /// provider's algorithm search, engine build and memory pattern happen here, not on the
    /// first frames.
    pub(super) fn warm_up(&self, meta: &ModelMetadata) -> Result<()> {
        let Some((w, h)) = self.config.frame_size else {
            return Ok(());
        };
        if !meta.accepts(w, h) {
            return Ok(()); // the run will report the size mismatch
        }
        let bytes = 3 * w as usize * h as usize * meta.tensor_format.element_bytes();
        let buffer = Arc::new(GpuBuffer::unpooled(self.ctx.alloc(bytes)?));
        let frame = GpuTexture {
            data: buffer,
            width: w,
            height: h,
            pitch: w as usize * meta.tensor_format.element_bytes(),
            format: meta.tensor_format,
        };
        self.warming
            .store(true, std::sync::atomic::Ordering::Relaxed);
        // Twice: ONNX Runtime plans its memory pattern on a shape's first run and allocates
        // it on the second, so the warm-up holds what every later frame will (a VRAM budget
        // is checked against it).
        let mut sizes = vec![1, 1];
        if self.config.batch.max_batch > 1 {
            sizes.push(self.config.batch.max_batch);
        }
        let result = sizes.into_iter().try_for_each(|n| {
            let frames = vec![frame.clone(); n];
            self.infer_frames(&frames, &mut drop).map(|_| ())
        });
        // The warm-up's timings, if its runs were timed by events, are not frames'.
        let drained = self.timer.finished(true).map(|_| ());
        self.warming
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.ctx.vram_dec(bytes);
        result.and(drained)
    }
}
