//! `TensorRtBackend`: the GPU backend of the seed. ONNX Runtime with the TensorRT provider
//! (falling back to CUDA under `auto`, saying why) or CUDA alone, never the CPU silently
//! (providers registered error-on-failure, CPU fallback of any node disabled); the image
//! tensors bound to device memory through one reused IO binding.
//!
//! Batch 1 without CUDA graphs is zero-copy: the texture's own buffer is the input and an
//! output-ring slot the output. Micro-batches and CUDA graphs need one contiguous input and
//! fixed addresses, so frames are copied device-to-device into a staging pair and the
//! results out into ring slots (two device copies per frame, no host copy); the report says
//! which mode ran.
//!
//! ONNX Runtime's run is synchronous: when it returns, the output is written, so a ring
//! slot handed downstream is complete. A slot is reused only once every downstream holder
//! has dropped it (the ring checks the reference count).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use ort::ep::{ArbitrarilyConfigurableExecutionProvider, CUDA, TensorRT};
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::Session;
use rave_core::backend::{ModelMetadata, UpscaleBackend};
use rave_core::error::{EngineError, Result};
use rave_core::gpu::{GpuBuffer, GpuContext};
use rave_core::metrics::StageMetrics;
use rave_core::types::GpuTexture;
use tracing::{info, warn};

use crate::backend_report::GpuBackendReport;
use crate::device_binding::DeviceBinding;
use crate::ep_options::{CudaSettings, Precision, ShapeProfile, TrtSettings};
use crate::ep_policy::EpPolicy;
use crate::model::LoadedModel;
use crate::ort_message::first_line;
use crate::output_ring::OutputRing;
use rave_core::batch::Batching;

mod frames;
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
    /// Output ring slots (at least `downstream_capacity + 1 + max_batch`).
    pub ring_size: usize,
    /// Frames the stage after inference may hold at once.
    pub downstream_capacity: usize,
    /// Where to look for the provider libraries, in order.
    pub provider_candidates: Vec<ProviderCandidate>,
    /// TensorRT engine cache folder (default: `trt_cache` beside the model).
    pub engine_cache: Option<PathBuf>,
    /// TensorRT kernel precision (the CUDA provider runs the model's own precision).
    pub precision: Precision,
    /// TensorRT builder workspace limit in bytes.
    pub workspace_bytes: Option<usize>,
    /// The clip's frame size, for TensorRT's optimisation profile.
    pub frame_size: Option<(u32, u32)>,
    /// Ask the CUDA provider for NHWC convolutions.
    pub cuda_prefer_nhwc: bool,
    /// Ask the CUDA provider to fuse convolution bias into cuDNN's convolution.
    pub cuda_fuse_conv_bias: bool,
    /// Capture CUDA graphs and replay them.
    pub cuda_graph: bool,
    /// Micro-batching.
    pub batch: Batching,
    /// The most ONNX Runtime's CUDA arena may hold (the run's VRAM budget less the frames
    /// in flight; `None`: no cap).
    pub vram_limit: Option<usize>,
    /// `model`'s description, measured once beforehand ([`LoadedModel::inspect`]) for every
    /// build of it (a VRAM fit builds several); `None`: measured at `initialize`.
    pub metadata: Option<rave_core::backend::ModelMetadata>,
}

impl GpuBackendConfig {
    /// Defaults for `model`: auto policy, device 0, batch 1, FP16 TensorRT kernels, NHWC
    /// convolutions with fused bias on the CUDA provider (the fastest measured on the H200),
    /// no graphs, the smallest safe ring for a downstream capacity of 4.
    pub fn new(model: PathBuf, provider_candidates: Vec<ProviderCandidate>) -> Self {
        let batch = Batching::default();
        Self {
            model,
            policy: EpPolicy::Auto,
            device_id: 0,
            ring_size: 4 + 1 + batch.max_batch,
            downstream_capacity: 4,
            provider_candidates,
            engine_cache: None,
            precision: Precision::Fp16,
            workspace_bytes: None,
            frame_size: None,
            cuda_prefer_nhwc: true,
            cuda_fuse_conv_bias: true,
            cuda_graph: false,
            batch,
            vram_limit: None,
            metadata: None,
        }
    }

    /// The fewest ring slots this configuration is safe with: every frame downstream, the
    /// frames of one batch being written, and one more.
    pub fn min_ring_slots(&self) -> usize {
        self.downstream_capacity + 1 + self.batch.max_batch
    }

    /// Whether frames go through the staging pair (micro-batches or CUDA graphs).
    pub fn staged(&self) -> bool {
        self.batch.max_batch > 1 || self.cuda_graph
    }
}

/// Device buffers for staged runs: `max_batch` inputs and outputs back to back.
struct Staging {
    input: GpuBuffer,
    output: GpuBuffer,
    dims: (u32, u32),
}

struct State {
    session: Session,
    binding: DeviceBinding,
    ring: Option<OutputRing<GpuBuffer>>,
    staging: Option<Staging>,
}

/// Held while a TensorRT session is made (see `build_session`).
static TENSORRT_BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    counters: crate::backend_report::Counters,
    /// Terminates the session's runs (set by `initialize`, with the binding).
    interrupter: OnceLock<Arc<dyn rave_core::backend::Interrupt>>,
    /// Set while `initialize` runs the warm-up frames, which are not counted.
    warming: std::sync::atomic::AtomicBool,
    /// GPU time of the runs queued without synchronizing.
    timer: rave_core::gpu::GpuTimer,
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
            counters: Default::default(),
            interrupter: OnceLock::new(),
            warming: Default::default(),
            timer: Default::default(),
        }
    }

    /// The provider the session runs on, after `initialize`.
    pub fn selected_provider(&self) -> Option<ProviderKind> {
        self.provider.get().copied()
    }

    /// The micro-batching this backend was configured with.
    pub fn batching_config(&self) -> Batching {
        self.config.batch
    }

    /// A handle that terminates the session's runs, once `initialize` has made it.
    pub fn run_interrupter(&self) -> Option<Arc<dyn rave_core::backend::Interrupt>> {
        self.interrupter.get().cloned()
    }

    /// Why `auto` fell back from TensorRT, when it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.get().map(String::as_str)
    }

    /// Everything the backend counted, for the run report.
    pub fn report(&self) -> GpuBackendReport {
        let guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ring = guard
            .as_ref()
            .and_then(|s| s.ring.as_ref())
            .map(|r| (r.metrics(), r.len()));
        GpuBackendReport::new(
            &self.config,
            self.selected_provider(),
            self.fallback_reason(),
            self.meta.get(),
            self.metrics.snapshot("infer"),
            ring,
            &self.counters,
        )
    }

    fn trt_settings(&self) -> TrtSettings {
        TrtSettings {
            engine_cache: self
                .config
                .engine_cache
                .clone()
                .unwrap_or_else(|| TrtSettings::default_cache_for(&self.config.model)),
            precision: self.config.precision.clone(),
            workspace_bytes: self.config.workspace_bytes,
            profile: self
                .config
                .frame_size
                .map(|(w, h)| ShapeProfile::for_clip(w, h, self.config.batch.max_batch as u32)),
            cuda_graph: self.config.cuda_graph,
        }
    }

    /// The image input's name, read from the model before the provider is chosen (the
    /// TensorRT profile names it).
    fn input_name(&self) -> Result<String> {
        Ok(self.description()?.input_name)
    }

    /// The model's description: the one given, else measured on a CPU session.
    fn description(&self) -> Result<rave_core::backend::ModelMetadata> {
        match &self.config.metadata {
            Some(meta) => Ok(meta.clone()),
            None => LoadedModel::inspect(self.runtime, &self.config.model),
        }
    }

    fn build_session(&self, kind: ProviderKind) -> Result<Session> {
        let found = resolve(kind, &self.config.provider_candidates)?;
        preload_bridge(&found.dir).map_err(EngineError::RuntimeLibrary)?;
        let id = self.config.device_id;
        let ep = match kind {
            ProviderKind::Cuda => {
                let settings = CudaSettings {
                    prefer_nhwc: self.config.cuda_prefer_nhwc,
                    cuda_graph: self.config.cuda_graph,
                    fuse_conv_bias: self.config.cuda_fuse_conv_bias,
                    compute_stream: Some(self.ctx.streams().inference.cu_stream() as usize),
                    mem_limit: self.config.vram_limit,
                };
                settings
                    .entries(id)
                    .into_iter()
                    .fold(CUDA::default(), |ep, (k, v)| ep.with_arbitrary_config(k, v))
                    .build()
            }
            ProviderKind::TensorRt => {
                let settings = self.trt_settings();
                settings.prepare()?;
                settings
                    .entries(id, &self.input_name()?)?
                    .into_iter()
                    .fold(TensorRT::default(), |ep, (k, v)| {
                        ep.with_arbitrary_config(k, v)
                    })
                    .build()
            }
        };
        let failed = |e: String| {
            EngineError::RuntimeLibrary(format!("{}: {}", kind.label(), first_line(&e)))
        };
        // TensorRT sessions are made one at a time in the process: the GPUs of `--gpus`
        // load side by side, and two builds writing one engine cache (or ONNX Runtime's
        // TensorRT provider initialising twice at once) is not safe; the second finds the
        // engine the first cached.
        let _one_build = match kind {
            ProviderKind::TensorRt => {
                Some(TENSORRT_BUILDS.lock().unwrap_or_else(|e| e.into_inner()))
            }
            ProviderKind::Cuda => None,
        };
        let builder =
            Session::builder(self.runtime.environment()).map_err(|e| failed(e.to_string()))?;
        let mut builder = builder
            .with_config_entry("session.disable_cpu_ep_fallback", "1")
            .map_err(|e| failed(e.to_string()))?
            .with_execution_providers([ep.error_on_failure()])
            .map_err(|e| failed(e.to_string()))?;
        builder
            .commit_from_file(&self.config.model)
            .map_err(|e| failed(e.to_string()))
    }

    /// Upscale a micro-batch (at most `max_batch` frames of one size) in one inference; the
    /// results come back in input order.
    pub fn process_batch(&self, inputs: &[GpuTexture]) -> Result<Vec<GpuTexture>> {
        let mut out = Vec::with_capacity(inputs.len());
        self.infer_frames(inputs, &mut |t| out.push(t))?;
        Ok(out)
    }

    /// Upscale one frame (the seed's `process`, synchronous): zero-copy at batch 1 without
    /// CUDA graphs, else through the staging pair; host allocations counted with
    /// `debug-alloc`.
    pub fn process_frame(&self, input: GpuTexture) -> Result<GpuTexture> {
        #[cfg(feature = "debug-alloc")]
        let scope = rave_core::debug_alloc::CountScope::begin();
        let mut out = None;
        let changed = self.infer_frames(std::slice::from_ref(&input), &mut |t| out = Some(t))?;
        #[cfg(feature = "debug-alloc")]
        {
            let allocations = scope.finish();
            if !changed && allocations > 0 {
                self.counters.host_allocations(allocations);
                let message = format!("{allocations} host allocations while processing one frame");
                if cfg!(feature = "strict-no-host-copies") {
                    return Err(EngineError::InvariantViolation(message));
                }
                warn!("{message}");
            }
        }
        let _ = changed;
        out.ok_or_else(|| EngineError::InvariantViolation("inference produced no frame".into()))
    }

    /// Release the session (the seed's `shutdown`), keeping the ring's counters for the
    /// report.
    pub fn close_session(&self) -> Result<()> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(state) = state {
            self.ctx.sync_all()?;
            if let Some(ring) = &state.ring {
                let m = ring.metrics();
                info!(
                    reuse = m.reuse,
                    contention = m.contention,
                    first_use = m.first_use,
                    reallocations = m.reallocations,
                    "output ring"
                );
                self.ctx.vram_dec(ring.slot_bytes() * ring.len());
                self.counters.keep_ring((m, ring.len()));
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
}

/// Largest `--max-batch` accepted.
pub const MAX_BATCH: usize = 16;

#[async_trait]
impl UpscaleBackend for TensorRtBackend {
    async fn initialize(&self) -> Result<()> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_some() {
            return Err(EngineError::InvariantViolation(
                "backend initialized twice".into(),
            ));
        }
        if self.config.batch.max_batch > MAX_BATCH {
            return Err(EngineError::Config(format!(
                "--max-batch {}: at most {MAX_BATCH}",
                self.config.batch.max_batch
            )));
        }
        if self.config.ring_size < self.config.min_ring_slots() {
            return Err(EngineError::Config(format!(
                "output ring of {} slots needs at least downstream capacity + 1 + max batch = {}",
                self.config.ring_size,
                self.config.min_ring_slots()
            )));
        }
        // Described on the CPU (the probe frames run there), before any provider is built.
        let inspected = self.description()?;
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
        let loaded = LoadedModel::with_metadata(session, &self.config.model, inspected);
        self.config
            .batch
            .validate(&loaded.metadata, &self.config.model)?;
        let meta = loaded.metadata;
        let binding = DeviceBinding::new(
            &loaded.session,
            &meta.input_name,
            &meta.output_name,
            meta.tensor_format,
            cuda_memory(self.config.device_id)?,
            if self.config.cuda_graph {
                self.config.batch.max_batch
            } else {
                0
            },
            // The CUDA provider queues on RAVE's inference stream: its runs need not end
            // with a synchronization (TensorRT's provider has its own stream: they must).
            kind == ProviderKind::Cuda,
        )?;
        let _ = self.interrupter.set(binding.interrupter());
        info!(model = %meta.name, scale = meta.scale, provider = kind.label(), format = ?meta.tensor_format, max_batch = self.config.batch.max_batch, cuda_graph = self.config.cuda_graph, "GPU backend ready");
        let _ = self.meta.set(meta.clone());
        let _ = self.provider.set(kind);
        *guard = Some(State {
            session: loaded.session,
            binding,
            ring: None,
            staging: None,
        });
        drop(guard);
        self.warm_up(&meta)
    }

    async fn process(&self, input: GpuTexture) -> Result<GpuTexture> {
        self.process_frame(input)
    }

    async fn shutdown(&self) -> Result<()> {
        self.close_session()
    }

    fn metadata(&self) -> Result<&ModelMetadata> {
        self.meta.get().ok_or(EngineError::NotInitialized)
    }
}
