//! `NativeBackend`: RAVE's own engine ([`crate::gpu::NativeEngine`]: SRVGGNetCompact or
//! RRDBNet) behind the backend contract ([`Upscaler`] on device frames, with the GPU path's
//! [`GpuInference`] extras), beside ONNX Runtime.
//!
//! Frames come and go as in the ONNX Runtime backend: planar f32 RGB textures in, and out
//! a slot of a pre-allocated output ring, reused only once every downstream holder has let
//! go of it, written through the ring's unique reference. The input texture is read in
//! place and the output written in place (no device copies, no host copies). The host does
//! not wait: the engine's kernels are queued on the inference stream after the work that
//! wrote the input (its buffer's events), and whoever reads the output or rewrites the
//! input is ordered after them the same way. GPU time is read from timing events once the
//! work is done ([`GpuTimer`]).
//!
//! One frame a call (no micro-batches). Interruption is a flag checked before each frame:
//! the kernels of a frame are queued without waiting, so a call returns quickly anyway; what
//! it cannot cut short is the first frame's engine build (the kernels' compile).

use std::path::Path;
use std::sync::{Arc, Mutex};

use rave_core::backend::{Interrupt, InterruptFlag, ModelMetadata, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::{EngineError, Result};
use rave_core::gpu::{GpuBuffer, GpuContext, GpuTimer};
use rave_core::metrics::StageMetrics;
use rave_core::types::{GpuTexture, PixelFormat};
use rave_tensorrt::backend_report::{GpuBackendReport, RingReport};
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::gpu_inference::GpuInference;
use rave_tensorrt::output_ring::OutputRing;

use crate::gpu::NativeEngine;
use crate::gpu::{compact_engine, rrdb_engine};
use crate::network::{Architecture, Network};
use crate::recognise_file;

/// The one engine name the run report gives the native engine.
pub const ENGINE_NAME: &str = "rave-native";

/// A network the native engine runs, with its scale as the recogniser found it.
#[derive(Clone)]
pub struct NativeNetwork {
    /// The network.
    pub net: Architecture,
    /// Output size / input size.
    pub scale: u32,
}

/// Why the native kernels cannot run the recognised `net` (on any GPU), if they cannot.
pub fn why_not_native(net: &Network) -> Option<String> {
    match &net.architecture {
        Architecture::Compact(compact) => compact_engine::unsupported(compact),
        Architecture::Rrdb(rrdb) => rrdb_engine::unsupported(rrdb),
    }
}

/// The network the native engine would run from `model` on a GPU it supports, or why it
/// cannot run this model.
pub fn network_eligibility(model: &Path) -> std::result::Result<NativeNetwork, String> {
    let net = recognise_file(model).map_err(|r| format!("the model is not recognised ({r})"))?;
    if let Some(why) = why_not_native(&net) {
        return Err(why);
    }
    Ok(NativeNetwork {
        net: net.architecture,
        scale: net.scale,
    })
}

/// Why `model` cannot run on the native engine on a GPU of compute capability `cc`, or
/// the network it would run.
pub fn eligibility(model: &Path, cc: (i32, i32)) -> std::result::Result<NativeNetwork, String> {
    let compact = network_eligibility(model)?;
    if cc != (9, 0) {
        return Err(format!(
            "the GPU is compute capability {}.{}; the native kernels are Hopper's (9.0) so far",
            cc.0, cc.1
        ));
    }
    Ok(compact)
}

struct State {
    engine: NativeEngine,
    dims: (u32, u32),
    ring: OutputRing<GpuBuffer>,
}

/// SRVGGNetCompact and RRDBNet models on RAVE's own kernels.
pub struct NativeBackend {
    ctx: Arc<GpuContext>,
    net: Architecture,
    meta: ModelMetadata,
    ring_size: usize,
    downstream: usize,
    state: Mutex<Option<State>>,
    metrics: StageMetrics,
    timer: GpuTimer,
    frames: std::sync::atomic::AtomicU64,
    interrupted: Arc<InterruptFlag>,
}

fn native_error(e: crate::gpu::GpuError) -> EngineError {
    EngineError::Inference(e.to_string())
}

impl NativeBackend {
    /// What the engine takes for `model` of `scale`: planar f32 frames of any size.
    pub fn metadata_for(model: &Path, scale: u32) -> ModelMetadata {
        ModelMetadata {
            name: model
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            scale,
            input_name: "input".into(),
            output_name: "output".into(),
            input_channels: 3,
            min_input_hw: (1, 1),
            max_input_hw: (u32::MAX, u32::MAX),
            tensor_format: PixelFormat::RgbPlanarF32,
            fixed_batch: None,
            side_multiple: 1,
        }
    }

    /// Load `network` (recognised from `model`) on `ctx`; `downstream` is how many frames the
    /// stages after inference may hold (the ring gets two slots more), `frame` the clip's
    /// size, for which the engine is built (and its kernels compiled) here.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: &Path,
        network: NativeNetwork,
        downstream: usize,
        frame: Option<(u32, u32)>,
    ) -> Result<Self> {
        let NativeNetwork { net, scale } = network;
        let meta = Self::metadata_for(model, scale);
        let backend = Self {
            ctx,
            net,
            meta,
            ring_size: downstream + 2,
            downstream,
            state: Mutex::new(None),
            metrics: StageMetrics::default(),
            timer: GpuTimer::default(),
            frames: Default::default(),
            interrupted: Arc::default(),
        };
        if let Some((w, h)) = frame {
            let mut guard = backend.state.lock().unwrap_or_else(|e| e.into_inner());
            backend.fit(&mut guard, (w, h))?;
        }
        Ok(backend)
    }

    /// Make the engine and the ring fit frames of `w x h`.
    fn fit(&self, state: &mut Option<State>, (w, h): (u32, u32)) -> Result<()> {
        if state.as_ref().is_some_and(|s| s.dims == (w, h)) {
            return Ok(());
        }
        let s = self.meta.scale as usize;
        let out_bytes = 3 * w as usize * h as usize * s * s * 4;
        // The old engine's maps go before the new engine's are allocated (an RRDBNet holds
        // gigabytes of them at 1080p), so a size change never needs both at once; its queued
        // kernels (the runs do not wait for them) finish first.
        if state.is_some() {
            self.ctx
                .host_sync(&self.ctx.streams().inference, "finishing the old engine")?;
        }
        let mut old_ring = state.take().map(|old| old.ring);
        if let Some(ring) = old_ring.as_mut() {
            let ctx = &self.ctx;
            let freed =
                ring.reallocate((w, h), out_bytes, |b| ctx.alloc(b).map(GpuBuffer::unpooled))?;
            self.ctx.vram_dec(freed);
        }
        let engine = NativeEngine::new(
            self.ctx.cuda(),
            self.ctx.streams().inference.clone(),
            &self.net,
            (h as usize, w as usize),
        )
        .map_err(native_error)?;
        let ring = match old_ring {
            Some(ring) => ring,
            None => {
                let ctx = &self.ctx;
                OutputRing::new(self.ring_size, self.downstream, (w, h), out_bytes, |b| {
                    ctx.alloc(b).map(GpuBuffer::unpooled)
                })?
            }
        };
        *state = Some(State {
            engine,
            dims: (w, h),
            ring,
        });
        Ok(())
    }
}

impl NativeBackend {
    /// Upscale one frame: the engine's kernels queued on the inference stream.
    fn run_frame(&self, input: &GpuTexture) -> Result<GpuTexture> {
        if input.format != PixelFormat::RgbPlanarF32 {
            return Err(EngineError::FormatMismatch {
                expected: PixelFormat::RgbPlanarF32,
                actual: input.format,
            });
        }
        let (w, h, s) = (input.width, input.height, self.meta.scale);
        let in_len = 3 * w as usize * h as usize;
        let out_len = in_len * (s * s) as usize;
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.fit(&mut guard, (w, h))?;
        let state = guard.as_mut().ok_or(EngineError::NotInitialized)?;
        // SAFETY: any bit pattern is a valid f32; transmute checks that the buffer holds
        // `in_len` of them.
        let view =
            unsafe { input.data.transmute::<f32>(in_len) }.ok_or(EngineError::BufferTooSmall {
                required: in_len * 4,
                available: input.data.capacity(),
            })?;
        let stream = self.ctx.streams().inference.clone();
        let State { engine, ring, .. } = state;
        // The engine's launches take the input view and the slot on the inference stream,
        // waiting there for the input's writer and the slot's last reader (their events).
        // The wait for the input's writer, before the timing starts.
        input.data.wait_for_writer(&stream);
        let started = self.timer.start(&stream)?;
        rave_core::gpu::timeline::gpu("inf_start", &stream);
        let slot = ring.acquire_with(|slot| {
            let available = slot.capacity();
            // SAFETY: as above, f32 from bytes; transmute_mut checks the length.
            let mut out = unsafe { slot.slice_mut().transmute_mut::<f32>(out_len) }.ok_or(
                EngineError::BufferTooSmall {
                    required: out_len * 4,
                    available,
                },
            )?;
            engine.run(&view, &mut out).map_err(native_error)
        })?;
        self.timer.end(&stream, started)?;
        rave_core::gpu::timeline::gpu("inf_done", &stream);
        self.frames
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(GpuTexture {
            data: slot,
            width: w * s,
            height: h * s,
            pitch: (w * s) as usize * 4,
            format: PixelFormat::RgbPlanarF32,
        })
    }
}

impl Upscaler for NativeBackend {
    type Frame = GpuTexture;

    fn model(&self) -> Result<&ModelMetadata> {
        Ok(&self.meta)
    }

    fn engine_name(&self) -> &str {
        ENGINE_NAME
    }

    fn batching(&self) -> Batching {
        Batching::default()
    }

    fn upscale(&self, frames: &[GpuTexture]) -> Result<Vec<GpuTexture>> {
        self.batching().admits(frames.len())?;
        frames
            .iter()
            .map(|frame| {
                self.interrupted.check()?;
                self.run_frame(frame)
            })
            .collect()
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        Some(self.interrupted.clone())
    }
}

impl GpuInference for NativeBackend {
    fn close(&self) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_some() {
            // The engine's queued kernels finish before its modules and maps go.
            self.ctx
                .host_sync(&self.ctx.streams().inference, "finishing the engine")?;
        }
        state.take();
        Ok(())
    }

    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<std::time::Duration>>> {
        let times = self.timer.finished(wait)?;
        for t in &times {
            self.metrics.record(*t);
        }
        Ok(Some(times))
    }

    fn counters(&self) -> GpuBackendReport {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let frames = self.frames.load(std::sync::atomic::Ordering::Relaxed);
        GpuBackendReport {
            policy: EpPolicy::Auto,
            provider: Some(ENGINE_NAME),
            fallback_reason: None,
            trt_precision: "fp16",
            tensor_format: Some(PixelFormat::RgbPlanarF32),
            max_batch: 1,
            cuda_graph: false,
            binding: "zero_copy",
            device_copies_per_frame: 0,
            inference: self.metrics.snapshot("infer"),
            batches: frames,
            mean_batch: if frames > 0 { 1.0 } else { 0.0 },
            ring: guard.as_ref().map(|s| RingReport {
                slots: s.ring.len(),
                metrics: s.ring.metrics(),
            }),
            audit_mismatches: 0,
            host_allocations: None,
        }
    }
}
