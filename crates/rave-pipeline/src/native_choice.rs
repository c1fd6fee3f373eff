//! Whether RAVE's native engine runs the model on the GPU (`--backend auto|native`, decided
//! before any of ONNX Runtime is loaded), and building it within the run's VRAM budget.

use rave_core::backend::Upscaler;
use rave_core::error::{EngineError, Result};
use rave_core::gpu::GpuContext;
use rave_native::Architecture;

use crate::backend_choice::{ChosenBackend, Engine, GpuPath};
use crate::config::{Device, GpuOptions, NativeChoice, PrecisionChoice, UpscaleConfig};
use crate::gpu_fit::{FitRequest, build_fitted};
use crate::report::BackendReport;
use crate::tiling_choice::decide;
use crate::vram_fit::Budget;

/// Which engine the GPU path builds, decided before any of ONNX Runtime is loaded.
#[derive(Debug, PartialEq)]
pub(crate) enum GpuEngineChoice<N> {
    /// RAVE's native engine runs network `N`: ONNX Runtime is not needed.
    Native(N),
    /// ONNX Runtime runs the model (loaded only then), with why the native engine does not.
    OnnxRuntime {
        /// Why not the native engine (`None`: it was not asked for).
        native_skipped: Option<String>,
    },
}

/// The GPU's engine for `choice`; `eligibility` (the network the native engine would run,
/// or why not) is asked only when the native engine may run. Generic over the network so
/// the decision is tested without a GPU.
pub(crate) fn gpu_engine_choice<N>(
    choice: &NativeChoice,
    eligibility: impl FnOnce() -> std::result::Result<N, String>,
) -> Result<GpuEngineChoice<N>> {
    if *choice == NativeChoice::Off {
        return Ok(GpuEngineChoice::OnnxRuntime {
            native_skipped: None,
        });
    }
    match eligibility() {
        Ok(net) => Ok(GpuEngineChoice::Native(net)),
        Err(why) if *choice == NativeChoice::Required => Err(EngineError::Config(format!(
            "--backend native: {why}; --backend auto runs it on ONNX Runtime"
        ))),
        Err(why) => Ok(GpuEngineChoice::OnnxRuntime {
            native_skipped: Some(why),
        }),
    }
}

/// An option given that the native engine does not honour, if any.
fn native_option_conflict(opts: &GpuOptions) -> Option<String> {
    match &opts.precision {
        PrecisionChoice::Fp32 => {
            return Some("--precision fp32 (it computes in fp16 with fp32 accumulation)".into());
        }
        PrecisionChoice::Int8(_) => return Some("--precision int8 (TensorRT's)".into()),
        _ => {}
    }
    if opts.cuda_graph {
        return Some("--cuda-graph (ONNX Runtime's)".into());
    }
    if opts.batch.max_batch > 1 {
        return Some(format!(
            "--max-batch {} (it runs one frame at a time)",
            opts.batch.max_batch
        ));
    }
    None
}

/// The network the native engine would run, or why it cannot run this model here.
pub(crate) fn native_eligibility(
    config: &UpscaleConfig,
    ctx: &GpuContext,
) -> std::result::Result<rave_native::backend::NativeNetwork, String> {
    if let Some(option) = native_option_conflict(&config.gpu) {
        return Err(format!("it does not take {option}"));
    }
    let cc = ctx
        .cuda()
        .compute_capability()
        .map_err(|e| format!("reading the GPU's compute capability: {e}"))?;
    rave_native::backend::eligibility(&config.model, cc)
}

pub(crate) fn native(
    config: &UpscaleConfig,
    network: rave_native::backend::NativeNetwork,
    frame: (u32, u32),
    downstream: usize,
    budget: Option<Budget>,
) -> Result<ChosenBackend> {
    let summary = match &network.net {
        // Counted as `rave models` counts them: the first convolution (from RGB) apart.
        Architecture::Compact(c) => format!(
            "SRVGGNetCompact x{}, {} body convolutions after the first",
            network.scale,
            c.body.len().saturating_sub(1)
        ),
        Architecture::Rrdb(r) => {
            format!("RRDBNet x{}, {} RRDB blocks", network.scale, r.blocks.len())
        }
    };
    let metadata = rave_native::backend::NativeBackend::metadata_for(&config.model, network.scale);
    let decided = decide(&config.tiling, &config.model, &metadata, frame)?;
    // The engine's feature maps are sized for what it runs: the whole frame, or tiles.
    let fitted = build_fitted(
        FitRequest {
            device: config.gpu.device_id,
            request: &config.tiling,
            decided,
            frame,
            scale: metadata.scale,
            tile_multiples: metadata.tile_multiples(),
            format: metadata.tensor_format,
            batch: 1,
            channels: &config.channels,
            budget,
            what: format!("model {} on {}x{} frames", metadata.name, frame.0, frame.1),
        },
        |ctx, size, _arena| {
            let backend = rave_native::backend::NativeBackend::new(
                ctx.clone(),
                &config.model,
                network.clone(),
                downstream,
                Some(size),
            )?;
            Ok(Box::new(backend))
        },
    )?;
    let reason = format!(
        "{}GPU {} via RAVE's native engine ({summary}; fp16 storage, fp32 accumulation, Hopper wgmma kernels; ONNX Runtime not loaded)",
        if config.device == Device::Auto {
            "auto: "
        } else {
            ""
        },
        config.gpu.device_id
    );
    Ok(ChosenBackend {
        report: BackendReport {
            requested: config.device,
            name: fitted.backend.engine_name().into(),
            reason,
            runtime_library: None,
        },
        engine: Engine::Gpu(Box::new(GpuPath {
            backend: fitted.backend,
            ctx: fitted.ctx,
        })),
        tiling: fitted.tiling,
        metadata,
        model: config.model.clone(),
        warning: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_the_native_engine_does_not_honour_send_the_model_to_onnx_runtime() {
        let mut opts = GpuOptions::default();
        assert_eq!(native_option_conflict(&opts), None);
        opts.precision = PrecisionChoice::Fp16;
        assert_eq!(native_option_conflict(&opts), None);
        opts.precision = PrecisionChoice::Fp32;
        assert!(
            native_option_conflict(&opts)
                .unwrap()
                .contains("--precision fp32")
        );
        opts.precision = PrecisionChoice::Auto;
        opts.cuda_graph = true;
        assert!(
            native_option_conflict(&opts)
                .unwrap()
                .contains("--cuda-graph")
        );
        opts.cuda_graph = false;
        opts.batch.max_batch = 4;
        assert!(
            native_option_conflict(&opts)
                .unwrap()
                .contains("--max-batch 4")
        );
    }

    #[test]
    fn a_recognised_native_model_on_the_gpu_needs_no_onnx_runtime() {
        // The native engine's branch carries no runtime: `gpu` loads ONNX Runtime only in
        // the other one.
        for choice in [NativeChoice::Auto, NativeChoice::Required] {
            let picked = gpu_engine_choice(&choice, || Ok("compact x2")).unwrap();
            assert_eq!(picked, GpuEngineChoice::Native("compact x2"));
        }
        let picked = gpu_engine_choice::<()>(&NativeChoice::Auto, || Err("8 features".into()));
        assert_eq!(
            picked.unwrap(),
            GpuEngineChoice::OnnxRuntime {
                native_skipped: Some("8 features".into())
            }
        );
        let e = gpu_engine_choice::<()>(&NativeChoice::Required, || Err("8 features".into()))
            .unwrap_err();
        assert_eq!(e.family().exit_code(), 2, "{e}");
        assert!(
            e.to_string().starts_with("--backend native: 8 features"),
            "{e}"
        );
        // `--backend cuda|tensorrt`: the model is not even read for the native engine.
        let picked = gpu_engine_choice::<()>(&NativeChoice::Off, || panic!("not asked"));
        assert_eq!(
            picked.unwrap(),
            GpuEngineChoice::OnnxRuntime {
                native_skipped: None
            }
        );
    }
}
