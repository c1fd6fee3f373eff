//! Where the model runs: the CPU backend, or the GPU path (GPU context, colour kernels and
//! the TensorRT/CUDA backend). `--device auto` takes the GPU when every piece of it comes up
//! and says why not otherwise (warning about GPU-only options it then ignores); `--device gpu`,
//! or a provider asked for by name, makes any failure the error. ONNX Runtime is loaded only
//! where it runs the model: the native engine needs none of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rave_core::backend::{Interrupt, ModelMetadata, UpscaleBackend, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::{EngineError, ErrorFamily, Result};
use rave_core::frame::RgbImage;
use rave_core::gpu::GpuContext;
use rave_core::tiling::{HostTiles, Tiled};
use rave_core::types::PixelFormat;
use rave_tensorrt::ep_options::Precision;
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::gpu_backend::{GpuBackendConfig, TensorRtBackend};
use rave_tensorrt::gpu_inference::GpuInference;
use rave_tensorrt::provider_paths::{self, ProviderKind};
use rave_tensorrt::{CpuBackend, LoadedModel, ModelOptions, OrtRuntime};

use crate::config::{Device, PrecisionChoice, UpscaleConfig};
use crate::gpu_fit::{FitRequest, build_fitted};
use crate::native_choice::{GpuEngineChoice, gpu_engine_choice, native, native_eligibility};
use crate::report::BackendReport;
use crate::tiling_choice::{Tiling, TilingReport, decide};
use crate::vram_fit::Budget;
use rave_core::block_on::block_on;
use std::cell::RefCell;

/// The GPU path, ready to run.
pub struct GpuPath {
    /// The device context (pool, streams, VRAM accounting).
    pub ctx: Arc<GpuContext>,
    /// The initialized backend: ONNX Runtime or the native engine.
    pub backend: Box<dyn GpuInference>,
}

/// What runs the model.
pub enum Engine {
    /// Host frames through the CPU backend.
    Cpu(Box<dyn Upscaler<Frame = RgbImage>>),
    /// Device frames through the GPU backend.
    Gpu(Box<GpuPath>),
}

impl Engine {
    /// The model as the engine takes it (with tiling, frames of any size its tiles cover).
    pub fn model(&self) -> Result<&ModelMetadata> {
        match self {
            Engine::Cpu(backend) => backend.model(),
            Engine::Gpu(gpu) => gpu.backend.model(),
        }
    }

    /// A handle that interrupts the backend's call in flight, where it has one.
    pub fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        match self {
            Engine::Cpu(backend) => backend.interrupter(),
            Engine::Gpu(gpu) => gpu.backend.interrupter(),
        }
    }
}

/// How many whole frames the CPU backend runs at once: one. On the 2-core development
/// machine a batch of 2 or 4 frames in one ONNX Runtime run measured within the run-to-run
/// noise of one frame a run (docs/BENCHMARKS.md), and a batch holds frames back.
pub const CPU_BATCHING: Batching = Batching {
    max_batch: 1,
    latency_deadline: std::time::Duration::from_millis(8),
};

/// How many tiles the CPU backend runs at once when it tiles: four (where the model's batch
/// axis is dynamic). Tiles are small, and four a run measured about 10% faster than one
/// there, in each of six rounds (docs/BENCHMARKS.md).
pub const CPU_TILE_BATCHING: Batching = Batching {
    max_batch: 4,
    ..CPU_BATCHING
};

/// The engine chosen for a run, with the report entry.
pub struct ChosenBackend {
    /// The engine.
    pub engine: Engine,
    /// The model's description.
    pub metadata: ModelMetadata,
    /// The model file that runs (the `-fp16` sibling when the GPU path chose it).
    pub model: PathBuf,
    /// Report entry.
    pub report: BackendReport,
    /// Something the user should be told before the run (GPU-only options ignored on the
    /// CPU).
    pub warning: Option<String>,
    /// Whether the frames are cut into tiles for the model, and why.
    pub tiling: TilingReport,
}

/// Load the model where `config.device` asks; `frame` is the clip's size (TensorRT's
/// optimisation profile) and `downstream` the frames the stages after inference may hold.
pub fn choose_backend(
    config: &UpscaleConfig,
    frame: (u32, u32),
    downstream: usize,
) -> Result<ChosenBackend> {
    // A library the user named must at least exist, whichever engine runs; it is loaded only
    // where ONNX Runtime runs the model.
    OrtRuntime::check_named(&config.runtime_candidates)?;
    match config.device {
        Device::Cpu => cpu(config, "--device cpu".into(), frame),
        Device::Gpu => gpu(config, frame, downstream).map_err(|e| match e {
            EngineError::NoGpu(m) => {
                EngineError::NoGpu(format!("{m}; --device cpu runs on the CPU"))
            }
            other => other,
        }),
        Device::Auto => match gpu(config, frame, downstream) {
            Ok(chosen) => Ok(chosen),
            // The GPU is there but the run does not fit its budget (or an option cannot
            // work): that is the answer, not a reason to run on the CPU instead.
            Err(e) if is_gpu_answer(&e) => Err(e),
            Err(e) => match &config.gpu.provider_requested_by {
                Some(by) => Err(provider_required(e, by)),
                None => {
                    let mut chosen = cpu(
                        config,
                        format!(
                            "auto: the GPU path is not available ({e}); the CPU runs the model"
                        ),
                        frame,
                    )?;
                    chosen.warning = ignored_on_cpu(&config.gpu.given);
                    Ok(chosen)
                }
            },
        },
    }
}

/// Whether the GPU path's error `e` stands under `--device auto`: a bad option (exit 2) or
/// the VRAM budget exceeded, where falling back to the CPU would hide what was asked.
fn is_gpu_answer(e: &EngineError) -> bool {
    e.family() == ErrorFamily::Usage || matches!(e, EngineError::VramLimit { .. })
}

/// A provider asked for by name could not run: the GPU's failure is the error (no fallback
/// to the CPU), saying what asked for it. Errors that are not about the GPU or its runtime
/// (a bad option, a broken model) stay as they are.
fn provider_required(e: EngineError, by: &str) -> EngineError {
    let why = format!(
        "; {by} asks for that GPU provider, so RAVE does not fall back to the CPU (drop it to run on the CPU)"
    );
    match e {
        EngineError::NoGpu(m) => EngineError::NoGpu(m + &why),
        EngineError::Cuda(m) => EngineError::Cuda(m + &why),
        EngineError::RuntimeLibrary(m) => EngineError::RuntimeLibrary(m + &why),
        other if other.family() == ErrorFamily::Runtime => {
            EngineError::NoGpu(format!("{other}{why}"))
        }
        other => other,
    }
}

/// The warning when `--device auto` runs on the CPU although GPU-only options were given.
fn ignored_on_cpu(given: &[String]) -> Option<String> {
    (!given.is_empty()).then(|| {
        format!(
            "{} ignored: the GPU path is not available, so the CPU runs the model (see the report's backend reason)",
            given.join(", ")
        )
    })
}

/// The CPU backend, wrapped in tiles where `config.tiling` decides so for frames of `frame`.
fn cpu(config: &UpscaleConfig, reason: String, frame: (u32, u32)) -> Result<ChosenBackend> {
    let runtime = load_runtime(config)?;
    let threads = if config.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        config.threads
    };
    let backend = CpuBackend::new(runtime, &config.model, &ModelOptions { threads })?;
    let metadata = backend.model()?.clone();
    let Tiling { tiles, report } = decide(&config.tiling, &config.model, &metadata, frame)?;
    let name = backend.engine_name().to_string();
    let engine: Box<dyn Upscaler<Frame = RgbImage>> = match tiles {
        Some((tile, overlap)) => {
            let backend = backend.with_batching(CPU_TILE_BATCHING)?;
            Box::new(Tiled::new(backend, HostTiles, tile, overlap)?)
        }
        None => Box::new(backend.with_batching(CPU_BATCHING)?),
    };
    Ok(ChosenBackend {
        metadata,
        model: config.model.clone(),
        report: BackendReport {
            requested: config.device,
            name,
            reason,
            runtime_library: Some(runtime.library().to_path_buf()),
        },
        engine: Engine::Cpu(engine),
        warning: None,
        tiling: report,
    })
}

/// ONNX Runtime, loaded on the first call (later calls return the same runtime), with the
/// time its load took logged.
fn load_runtime(config: &UpscaleConfig) -> Result<&'static OrtRuntime> {
    let t = std::time::Instant::now();
    let runtime = OrtRuntime::load(&config.runtime_candidates)?;
    tracing::debug!(
        library = %runtime.library().display(),
        "ONNX Runtime ready in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    Ok(runtime)
}

/// The `NAME-fp16.onnx` beside `model`, if there is one.
fn fp16_sibling(model: &Path) -> Option<PathBuf> {
    let stem = model.file_stem()?.to_str()?;
    let sibling = model.with_file_name(format!("{stem}-fp16.onnx"));
    sibling.is_file().then_some(sibling)
}

/// The model file the GPU runs for `precision`, and a note on the choice.
pub fn gpu_model(
    runtime: &OrtRuntime,
    model: &Path,
    precision: &PrecisionChoice,
) -> Result<(PathBuf, String)> {
    let format = LoadedModel::inspect(runtime, model)?.tensor_format;
    gpu_model_for(format, model, precision)
}

/// [`gpu_model`] for a model whose tensors are `format`.
fn gpu_model_for(
    format: PixelFormat,
    model: &Path,
    precision: &PrecisionChoice,
) -> Result<(PathBuf, String)> {
    match (format, precision) {
        (PixelFormat::RgbPlanarF16, PrecisionChoice::Fp32) => Err(EngineError::Config(format!(
            "--precision fp32: {} is a half-precision model; pass its float32 original",
            model.display()
        ))),
        (PixelFormat::RgbPlanarF16, _) => Ok((model.to_path_buf(), "fp16 model".into())),
        (_, p) if p.wants_fp16_model() => match fp16_sibling(model) {
            Some(sibling) => Ok((sibling, "fp16 variant of the model".into())),
            None if *p == PrecisionChoice::Fp16 => Err(EngineError::Config(format!(
                "--precision fp16: no half-precision variant of {} (make one with tools/to_fp16.py, or use --precision fp32)",
                model.display()
            ))),
            None => Ok((
                model.to_path_buf(),
                "fp32 model (no -fp16 variant beside it)".into(),
            )),
        },
        _ => Ok((model.to_path_buf(), "fp32 model".into())),
    }
}

fn gpu(config: &UpscaleConfig, frame: (u32, u32), downstream: usize) -> Result<ChosenBackend> {
    let opts = &config.gpu;
    if matches!(opts.precision, PrecisionChoice::Int8(_)) && opts.policy == EpPolicy::Cuda {
        return Err(EngineError::Config(
            "--precision int8 needs TensorRT; use --backend tensorrt or auto".into(),
        ));
    }
    // A first context to look at the GPU: its compute capability and free memory (each
    // build below gets a fresh one, limited to the budget).
    let probe = GpuContext::new(opts.device_id)?;
    let budget = Budget::for_run(
        opts.vram_limit,
        probe.device_free(),
        opts.workers_sharing,
        opts.workers_to_start,
    );
    let choice = gpu_engine_choice(&opts.native, || native_eligibility(config, &probe))?;
    drop(probe);
    let native_skipped = match choice {
        GpuEngineChoice::Native(net) => return native(config, net, frame, downstream, budget),
        GpuEngineChoice::OnnxRuntime { native_skipped } => native_skipped,
    };
    let runtime = load_runtime(config)?;
    let inspected = LoadedModel::inspect(runtime, &config.model)?;
    let (model, model_note) =
        gpu_model_for(inspected.tensor_format, &config.model, &opts.precision)?;
    let decided = decide(&config.tiling, &config.model, &inspected, frame)?;
    // What runs, described once for every build of the fit (the `-fp16` sibling is another
    // file, with half-precision tensors).
    let running = match model == config.model {
        true => inspected.clone(),
        false => LoadedModel::inspect(runtime, &model)?,
    };
    let mut search = opts.provider_search.clone();
    search.runtime_dir = runtime.library().parent().map(Path::to_path_buf);
    let candidates = provider_paths::candidates(&search);
    let precision = match opts.precision.trt() {
        Precision::Fp32 => "fp32",
        Precision::Fp16 => "fp16",
        Precision::Int8 { .. } => "int8",
    };
    // What the chosen build said of itself (the last build that succeeded is the one kept).
    let built: RefCell<Option<(ProviderKind, Option<String>, ModelMetadata)>> = RefCell::default();
    let fitted = build_fitted(
        FitRequest {
            device: opts.device_id,
            request: &config.tiling,
            decided,
            frame,
            scale: inspected.scale,
            tile_multiples: inspected.tile_multiples(),
            // The `-fp16` sibling, where that is what runs, takes half-precision frames.
            format: running.tensor_format,
            batch: opts.batch.max_batch,
            channels: &config.channels,
            budget,
            what: format!("model {} on {}x{} frames", inspected.name, frame.0, frame.1),
        },
        |ctx, size, arena| {
            let mut c = GpuBackendConfig::new(model.clone(), candidates.clone());
            c.policy = opts.policy;
            c.device_id = rave_core::gpu::stand_in::driver_ordinal(opts.device_id) as i32;
            c.engine_cache = opts.engine_cache.clone();
            c.precision = opts.precision.trt();
            c.workspace_bytes = opts.workspace_bytes;
            // TensorRT's profile and the warm-up are for what the model runs: tiles,
            // where it does.
            c.frame_size = Some(size);
            c.batch = opts.batch;
            c.cuda_graph = opts.cuda_graph;
            c.downstream_capacity = downstream;
            c.ring_size = c.min_ring_slots();
            c.vram_limit = arena;
            c.metadata = Some(running.clone());
            let backend = TensorRtBackend::new(c, ctx.clone(), runtime);
            block_on(backend.initialize())?;
            *built.borrow_mut() = Some((
                backend.selected_provider().unwrap_or(ProviderKind::Cuda),
                backend.fallback_reason().map(str::to_string),
                UpscaleBackend::metadata(&backend)?.clone(),
            ));
            Ok(Box::new(backend))
        },
    )?;
    let (provider, fallback, metadata) = built
        .into_inner()
        .ok_or_else(|| EngineError::InvariantViolation("no GPU backend was built".into()))?;
    let name = fitted.backend.engine_name().to_string();
    let mut reason = format!(
        "{}GPU {} via {}, {model_note}",
        if config.device == Device::Auto {
            "auto: "
        } else {
            ""
        },
        opts.device_id,
        provider.label()
    );
    if provider == ProviderKind::TensorRt {
        reason.push_str(&format!(", TensorRT {precision} kernels"));
    }
    if let Some(why) = fallback {
        reason.push_str(&format!(" (TensorRT unavailable: {why})"));
    }
    if let Some(why) = native_skipped {
        reason.push_str(&format!("; not the native engine: {why}"));
    }
    Ok(ChosenBackend {
        engine: Engine::Gpu(Box::new(GpuPath {
            backend: fitted.backend,
            ctx: fitted.ctx,
        })),
        tiling: fitted.tiling,
        metadata,
        model,
        report: BackendReport {
            requested: config.device,
            name,
            reason,
            runtime_library: Some(runtime.library().to_path_buf()),
        },
        warning: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fp16_sibling_is_found_beside_the_model() {
        let dir = std::env::temp_dir().join(format!("rave-sibling-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = dir.join("net-x2.onnx");
        std::fs::write(&m, b"").unwrap();
        assert_eq!(fp16_sibling(&m), None);
        std::fs::write(dir.join("net-x2-fp16.onnx"), b"").unwrap();
        assert_eq!(fp16_sibling(&m), Some(dir.join("net-x2-fp16.onnx")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_named_provider_that_cannot_run_stays_a_runtime_error_saying_who_asked() {
        let e = provider_required(
            EngineError::NoGpu("no CUDA driver".into()),
            "--backend cuda",
        );
        assert_eq!(e.family().exit_code(), 6);
        let text = e.to_string();
        assert!(
            text.contains("no CUDA driver; --backend cuda asks for that GPU provider"),
            "{text}"
        );
        let e = provider_required(
            EngineError::VramLimit {
                requested: 1,
                would_be: 2,
                limit: 1,
            },
            "RAVE_ORT_TENSORRT=trt",
        );
        assert_eq!(e.family().exit_code(), 6);
        assert!(e.to_string().contains("RAVE_ORT_TENSORRT=trt asks"), "{e}");
        let e = provider_required(EngineError::Config("--precision fp32: ...".into()), "x");
        assert_eq!(e.to_string(), "--precision fp32: ...");
    }

    #[test]
    fn a_budget_or_option_error_on_the_gpu_is_not_hidden_by_the_cpu_under_auto() {
        assert!(is_gpu_answer(&EngineError::Config(
            "model m does not fit the 64 MiB budget".into()
        )));
        assert!(is_gpu_answer(&EngineError::VramLimit {
            requested: 1,
            would_be: 2,
            limit: 1
        }));
        assert!(!is_gpu_answer(&EngineError::NoGpu("no driver".into())));
        assert!(!is_gpu_answer(&EngineError::Cuda("launch failed".into())));
    }

    #[test]
    fn ignored_gpu_options_are_named_in_one_warning() {
        assert_eq!(ignored_on_cpu(&[]), None);
        let w = ignored_on_cpu(&["--precision".into(), "--max-batch".into()]).unwrap();
        assert!(w.starts_with("--precision, --max-batch ignored: "), "{w}");
    }
}
