//! `TensorRtBackend`: the GPU backend of the seed. ONNX Runtime with the TensorRT provider
//! (falling back to CUDA under `auto`, saying why) or CUDA alone, never the CPU silently;
//! inputs and outputs bound by IO binding to device memory — the texture's own buffer in,
//! an output-ring slot out — so no frame data passes through the host or is copied.
//!
//! Not yet here (see the closing notes of the issue): FP16 inputs, micro-batching, INT8
//! calibration, optimisation profiles, CUDA graphs, the debug-allocation guards.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use async_trait::async_trait;
use ort::ep::{CUDA, TensorRT};
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::Session;
use ort::value::{Shape, TensorElementType, TensorRefMut, ValueType};
use rave_core::backend::{ModelMetadata, UpscaleBackend};
use rave_core::error::{EngineError, Result};
use rave_core::gpu::{GpuBuffer, GpuContext};
use rave_core::metrics::StageMetrics;
use rave_core::types::{GpuTexture, PixelFormat};
use tracing::{info, warn};

use crate::ep_policy::EpPolicy;
use crate::model::LoadedModel;
use crate::output_ring::{OutputRing, RingMetricsSnapshot};
use crate::provider_paths::{ProviderCandidate, ProviderKind, resolve};
use crate::providers::preload_bridge;
use crate::runtime::OrtRuntime;

/// How to build the GPU backend.
#[derive(Debug, Clone)]
pub struct GpuBackendConfig {
    /// The ONNX model.
    pub model: PathBuf,
    /// Execution-provider policy.
    pub policy: EpPolicy,
    /// CUDA device ordinal.
    pub device_id: i32,
    /// Output ring slots (at least `downstream_capacity + 2`).
    pub ring_size: usize,
    /// Frames the stage after inference may hold at once.
    pub downstream_capacity: usize,
    /// Where to look for the provider libraries, in order.
    pub provider_candidates: Vec<ProviderCandidate>,
    /// TensorRT engine cache folder (default: `trt_cache` beside the model).
    pub engine_cache: Option<PathBuf>,
    /// Let TensorRT build FP16 kernels.
    pub trt_fp16: bool,
    /// Ask the CUDA provider for NHWC convolutions (faster on tensor cores for some models).
    pub cuda_prefer_nhwc: bool,
}

struct State {
    session: Session,
    ring: Option<OutputRing<GpuBuffer>>,
    memory: MemoryInfo<'static>,
}

/// The GPU inference backend.
pub struct TensorRtBackend {
    config: GpuBackendConfig,
    ctx: Arc<GpuContext>,
    runtime: &'static OrtRuntime,
    meta: OnceLock<ModelMetadata>,
    provider: OnceLock<ProviderKind>,
    fallback: OnceLock<String>,
    state: Mutex<Option<State>>,
    metrics: StageMetrics,
}

impl TensorRtBackend {
    /// A backend for `config` on `ctx`; nothing loads until `initialize`.
    pub fn new(
        config: GpuBackendConfig,
        ctx: Arc<GpuContext>,
        runtime: &'static OrtRuntime,
    ) -> Self {
        Self {
            config,
            ctx,
            runtime,
            meta: OnceLock::new(),
            provider: OnceLock::new(),
            fallback: OnceLock::new(),
            state: Mutex::new(None),
            metrics: StageMetrics::default(),
        }
    }

    /// The provider the session runs on, after `initialize`.
    pub fn selected_provider(&self) -> Option<ProviderKind> {
        self.provider.get().copied()
    }

    /// Why `auto` fell back from TensorRT, when it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.get().map(String::as_str)
    }

    /// Inference counters (frames, mean and peak latency).
    pub fn inference_metrics(&self) -> rave_core::metrics::StageSnapshot {
        self.metrics.snapshot("infer")
    }

    /// Output ring counters, once a frame has run.
    pub fn ring_metrics(&self) -> Option<RingMetricsSnapshot> {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .and_then(|s| s.ring.as_ref())
            .map(|r| r.metrics())
    }

    fn build_session(&self, kind: ProviderKind) -> Result<Session> {
        let found = resolve(kind, &self.config.provider_candidates)?;
        preload_bridge(&found.dir).map_err(EngineError::RuntimeLibrary)?;
        let id = self.config.device_id;
        let ep = match kind {
            ProviderKind::Cuda => CUDA::default()
                .with_device_id(id)
                .with_prefer_nhwc(self.config.cuda_prefer_nhwc)
                .build(),
            ProviderKind::TensorRt => {
                let cache = self.config.engine_cache.clone().unwrap_or_else(|| {
                    self.config
                        .model
                        .parent()
                        .unwrap_or(std::path::Path::new("."))
                        .join("trt_cache")
                });
                TensorRT::default()
                    .with_device_id(id)
                    .with_engine_cache(true)
                    .with_engine_cache_path(cache.display())
                    .with_fp16(self.config.trt_fp16)
                    .build()
            }
        };
        let failed = |e: String| {
            EngineError::RuntimeLibrary(format!("{}: {}", kind.label(), first_line(&e)))
        };
        let builder =
            Session::builder(self.runtime.environment()).map_err(|e| failed(e.to_string()))?;
        let mut builder = builder
            .with_execution_providers([ep.error_on_failure()])
            .map_err(|e| failed(e.to_string()))?;
        builder
            .commit_from_file(&self.config.model)
            .map_err(|e| failed(e.to_string()))
    }
}

/// Bind `value` as input `name` exactly as it is. ort's safe `bind_input` protects borrowed
/// tensors from aliasing by copying them (a device copy through a helper session), which
/// both breaks the zero-copy contract and hung on the H200; the seed binds through the C API.
fn bind_input_in_place(
    binding: &mut ort::session::IoBinding,
    name: &str,
    value: &ort::value::TensorRefMut<'_, f32>,
) -> Result<()> {
    use ort::AsPointer;
    let cname = std::ffi::CString::new(name)
        .map_err(|_| EngineError::ModelMetadata(format!("input name {name:?} contains NUL")))?;
    let api = ort::api();
    // SAFETY: `binding` and `value` are live ORT objects for the duration of the call; ORT
    // copies the name and keeps its own reference to the value until the binding is cleared
    // or dropped, and the caller keeps the device memory alive until after the run.
    let status = unsafe { (api.BindInput)(binding.ptr_mut(), cname.as_ptr(), value.ptr()) };
    if status.0.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status carries a NUL-terminated message owned by the status, which
    // is released right after it is copied.
    let message = unsafe {
        let text = std::ffi::CStr::from_ptr((api.GetErrorMessage)(status.0))
            .to_string_lossy()
            .into_owned();
        (api.ReleaseStatus)(status.0);
        text
    };
    Err(EngineError::Inference(format!(
        "binding input {name}: {message}"
    )))
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_string()
}

fn cuda_memory(device_id: i32) -> Result<MemoryInfo<'static>> {
    MemoryInfo::new(
        AllocationDevice::CUDA,
        device_id,
        AllocatorType::Device,
        MemoryType::Default,
    )
    .map_err(|e| EngineError::Inference(format!("CUDA memory info: {e}")))
}

#[async_trait]
impl UpscaleBackend for TensorRtBackend {
    async fn initialize(&self) -> Result<()> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_some() {
            return Err(EngineError::InvariantViolation(
                "backend initialized twice".into(),
            ));
        }
        if self.config.ring_size < self.config.downstream_capacity + 2 {
            return Err(EngineError::Config(format!(
                "output ring of {} slots needs at least downstream capacity + 2 = {}",
                self.config.ring_size,
                self.config.downstream_capacity + 2
            )));
        }
        let mut last_err = None;
        let mut chosen = None;
        for &kind in self.config.policy.attempts() {
            match self.build_session(kind) {
                Ok(session) => {
                    chosen = Some((kind, session));
                    break;
                }
                Err(e) => {
                    if self.config.policy == EpPolicy::Auto && kind == ProviderKind::TensorRt {
                        warn!(reason = %e, "TensorRT unavailable; falling back to the CUDA execution provider");
                        let _ = self.fallback.set(e.to_string());
                    }
                    last_err = Some(e);
                }
            }
        }
        let Some((kind, session)) = chosen else {
            return Err(last_err
                .unwrap_or_else(|| EngineError::InvariantViolation("no provider tried".into())));
        };
        let input_type = match session.inputs()[0].dtype() {
            ValueType::Tensor { ty, .. } => *ty,
            _ => TensorElementType::Float32,
        };
        if input_type != TensorElementType::Float32 {
            return Err(EngineError::ModelMetadata(format!(
                "{}: the GPU backend runs fp32-input models for now; this one takes {input_type:?}",
                self.config.model.display()
            )));
        }
        let loaded = LoadedModel::describe(session, &self.config.model, false)?;
        info!(model = %loaded.metadata.name, scale = loaded.metadata.scale, provider = kind.label(), "GPU backend ready");
        let _ = self.meta.set(loaded.metadata);
        let _ = self.provider.set(kind);
        *guard = Some(State {
            session: loaded.session,
            ring: None,
            memory: cuda_memory(self.config.device_id)?,
        });
        Ok(())
    }

    async fn process(&self, input: GpuTexture) -> Result<GpuTexture> {
        if input.format != PixelFormat::RgbPlanarF32 {
            return Err(EngineError::FormatMismatch {
                expected: PixelFormat::RgbPlanarF32,
                actual: input.format,
            });
        }
        let meta = self.meta.get().ok_or(EngineError::NotInitialized)?;
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = guard.as_mut().ok_or(EngineError::NotInitialized)?;
        let (w, h, s) = (input.width, input.height, meta.scale);
        if !meta.accepts(w, h) {
            return Err(EngineError::DimensionMismatch(format!(
                "model {} does not take {w}x{h}",
                meta.name
            )));
        }
        let out_bytes = 3 * (w * s) as usize * (h * s) as usize * 4;
        let ctx = &self.ctx;
        let allocate = |bytes: usize| ctx.alloc(bytes).map(GpuBuffer::unpooled);
        match &mut state.ring {
            Some(ring) if ring.needs_realloc((w, h)) => {
                let freed = ring.reallocate((w, h), out_bytes, allocate)?;
                ctx.vram_dec(freed);
            }
            Some(_) => {}
            None => {
                state.ring = Some(OutputRing::new(
                    self.config.ring_size,
                    self.config.downstream_capacity,
                    (w, h),
                    out_bytes,
                    allocate,
                )?);
            }
        }
        let slot = state.ring.as_mut().expect("ring set above").acquire()?;
        let out_ptr = slot.device_addr();
        // The preprocess work that wrote the input must be done before ONNX Runtime reads it.
        input
            .data
            .stream()
            .synchronize()
            .map_err(|e| EngineError::Cuda(format!("input sync: {e}")))?;
        let in_ptr = input.device_ptr();
        let in_shape = Shape::from([1i64, 3, i64::from(h), i64::from(w)]);
        let out_shape = Shape::from([1i64, 3, i64::from(h * s), i64::from(w * s)]);
        let infer = |e: ort::Error| EngineError::Inference(e.to_string());
        // SAFETY: `in_ptr` addresses the texture's device buffer of 3*w*h f32 (format checked
        // above) and `out_ptr` a ring slot of `out_bytes`; both are CUDA memory of this
        // context, and both buffers (`input`, `slot`) outlive the tensors, which are dropped
        // at the end of this call.
        let (input_t, output_t) = unsafe {
            (
                TensorRefMut::<f32>::from_raw(
                    state.memory.clone(),
                    in_ptr as *mut c_void,
                    in_shape,
                )
                .map_err(infer)?,
                TensorRefMut::<f32>::from_raw(
                    state.memory.clone(),
                    out_ptr as *mut c_void,
                    out_shape,
                )
                .map_err(infer)?,
            )
        };
        let mut binding = state.session.create_binding().map_err(infer)?;
        bind_input_in_place(&mut binding, &meta.input_name, &input_t)?;
        binding
            .bind_output(meta.output_name.as_str(), output_t)
            .map_err(infer)?;
        let t = Instant::now();
        let outputs = state.session.run_binding(&binding).map_err(infer)?;
        // Pointer-identity audit: the runtime must have written into our slot.
        let written = outputs[0]
            .view()
            .downcast::<ort::value::DynTensorValueType>()
            .map_err(infer)?
            .data_ptr() as u64;
        if written != out_ptr {
            return Err(EngineError::InvariantViolation(format!(
                "ONNX Runtime wrote the output to {written:#x}, not the bound ring slot {out_ptr:#x}"
            )));
        }
        drop(outputs);
        binding.synchronize_outputs().map_err(infer)?;
        self.metrics.record(t.elapsed());
        Ok(GpuTexture {
            data: slot,
            width: w * s,
            height: h * s,
            pitch: (w * s) as usize * 4,
            format: PixelFormat::RgbPlanarF32,
        })
    }

    async fn shutdown(&self) -> Result<()> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(state) = state {
            self.ctx.sync_all()?;
            if let Some(ring) = &state.ring {
                let m = ring.metrics();
                info!(
                    reuse = m.reuse,
                    contention = m.contention,
                    first_use = m.first_use,
                    "output ring"
                );
                self.ctx.vram_dec(ring.slot_bytes() * ring.len());
            }
            let m = self.metrics.snapshot("infer");
            info!(
                frames = m.frames,
                avg_ms = m.avg_ms,
                peak_ms = m.peak_ms,
                "inference"
            );
        }
        Ok(())
    }

    fn metadata(&self) -> Result<&ModelMetadata> {
        self.meta.get().ok_or(EngineError::NotInitialized)
    }
}
