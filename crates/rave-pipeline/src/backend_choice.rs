//! Where the model runs: the CPU backend, or the GPU path (GPU context, colour kernels and
//! the TensorRT/CUDA backend). `--device auto` takes the GPU when every piece of it comes up
//! and says why not otherwise; `--device gpu` makes any failure the error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rave_core::backend::{HostUpscaleBackend, ModelMetadata, UpscaleBackend};
use rave_core::error::{EngineError, Result};
use rave_core::gpu::GpuContext;
use rave_core::types::PixelFormat;
use rave_tensorrt::ep_options::Precision;
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::gpu_backend::{GpuBackendConfig, TensorRtBackend};
use rave_tensorrt::provider_paths::{self, ProviderKind};
use rave_tensorrt::{CpuBackend, LoadedModel, ModelOptions, OrtRuntime};

use crate::config::{Device, PrecisionChoice, UpscaleConfig};
use crate::report::BackendReport;
use rave_core::block_on::block_on;

/// The GPU path, ready to run.
pub struct GpuPath {
    /// The device context (pool, streams, VRAM accounting).
    pub ctx: Arc<GpuContext>,
    /// The initialized backend.
    pub backend: TensorRtBackend,
}

/// What runs the model.
pub enum Engine {
    /// Host frames through the CPU backend.
    Cpu(Box<dyn HostUpscaleBackend>),
    /// Device frames through the GPU backend.
    Gpu(Box<GpuPath>),
}

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
}

/// Load the model where `config.device` asks; `frame` is the clip's size (TensorRT's
/// optimisation profile) and `downstream` the frames the stages after inference may hold.
pub fn choose_backend(
    config: &UpscaleConfig,
    frame: (u32, u32),
    downstream: usize,
) -> Result<ChosenBackend> {
    let runtime = OrtRuntime::load(&config.runtime_candidates)?;
    match config.device {
        Device::Cpu => cpu(config, runtime, "--device cpu".into()),
        Device::Gpu => gpu(config, runtime, frame, downstream).map_err(|e| match e {
            EngineError::NoGpu(m) => {
                EngineError::NoGpu(format!("{m}; --device cpu runs on the CPU"))
            }
            other => other,
        }),
        Device::Auto => match gpu(config, runtime, frame, downstream) {
            Ok(chosen) => Ok(chosen),
            Err(e) => cpu(
                config,
                runtime,
                format!("auto: the GPU path is not available ({e}); the CPU runs the model"),
            ),
        },
    }
}

fn cpu(
    config: &UpscaleConfig,
    runtime: &'static OrtRuntime,
    reason: String,
) -> Result<ChosenBackend> {
    let threads = if config.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        config.threads
    };
    let backend = CpuBackend::new(runtime, &config.model, &ModelOptions { threads })?;
    Ok(ChosenBackend {
        metadata: backend.metadata().clone(),
        model: config.model.clone(),
        report: BackendReport {
            requested: config.device,
            name: backend.backend_name().into(),
            reason,
            runtime_library: runtime.library().to_path_buf(),
        },
        engine: Engine::Cpu(Box::new(backend)),
    })
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

fn gpu(
    config: &UpscaleConfig,
    runtime: &'static OrtRuntime,
    frame: (u32, u32),
    downstream: usize,
) -> Result<ChosenBackend> {
    let opts = &config.gpu;
    if matches!(opts.precision, PrecisionChoice::Int8(_)) && opts.policy == EpPolicy::Cuda {
        return Err(EngineError::Config(
            "--precision int8 needs TensorRT; use --backend tensorrt or auto".into(),
        ));
    }
    let ctx = GpuContext::new(opts.device_id)?;
    let (model, model_note) = gpu_model(runtime, &config.model, &opts.precision)?;
    let mut search = opts.provider_search.clone();
    search.runtime_dir = runtime.library().parent().map(Path::to_path_buf);
    let mut c = GpuBackendConfig::new(model.clone(), provider_paths::candidates(&search));
    c.policy = opts.policy;
    c.device_id = opts.device_id as i32;
    c.engine_cache = opts.engine_cache.clone();
    c.precision = opts.precision.trt();
    c.workspace_bytes = opts.workspace_bytes;
    c.frame_size = Some(frame);
    c.batch = opts.batch;
    c.cuda_graph = opts.cuda_graph;
    c.downstream_capacity = downstream;
    c.ring_size = c.min_ring_slots();
    let precision = match &c.precision {
        Precision::Fp32 => "fp32",
        Precision::Fp16 => "fp16",
        Precision::Int8 { .. } => "int8",
    };
    let backend = TensorRtBackend::new(c, ctx.clone(), runtime);
    block_on(backend.initialize())?;
    let provider = backend.selected_provider().unwrap_or(ProviderKind::Cuda);
    let name = match provider {
        ProviderKind::Cuda => "onnxruntime-cuda",
        ProviderKind::TensorRt => "onnxruntime-tensorrt",
    };
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
    if let Some(why) = backend.fallback_reason() {
        reason.push_str(&format!(" (TensorRT unavailable: {why})"));
    }
    Ok(ChosenBackend {
        metadata: backend.metadata()?.clone(),
        model,
        report: BackendReport {
            requested: config.device,
            name: name.into(),
            reason,
            runtime_library: runtime.library().to_path_buf(),
        },
        engine: Engine::Gpu(Box::new(GpuPath { ctx, backend })),
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
}
