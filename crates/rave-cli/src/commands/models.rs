//! `rave models`: list installed models, loading each to report its real scale, and say
//! which engine each is eligible for (the native engine needs a recognised architecture).

use rave_core::error::Result;
use rave_core::types::PixelFormat;
use rave_native::Refusal;
use rave_tensorrt::{LoadedModel, OrtRuntime};
use serde::Serialize;

use crate::args::{GlobalArgs, ModelsArgs};
use crate::console::outln;
use crate::locate;

/// One installed model.
#[derive(Debug, Serialize)]
struct ModelEntry {
    name: String,
    path: std::path::PathBuf,
    size_bytes: u64,
    scale: Option<u32>,
    /// fp32 or fp16 image tensors.
    precision: Option<&'static str>,
    /// Fixed batch size, or None when the batch axis is dynamic (micro-batching possible).
    fixed_batch: Option<u32>,
    default: bool,
    problem: Option<String>,
    /// Which inference engine the model is eligible for, and why.
    engine: EngineEligibility,
}

/// Whether the native engine runs the model (recognised from the graph, not the name, and
/// implemented by its kernels), or why ONNX Runtime does.
#[derive(Debug, Serialize)]
struct EngineEligibility {
    /// "native" (on a GPU the native kernels support) or "onnxruntime".
    engine: &'static str,
    /// The recognised architecture ("SRVGGNetCompact", "RRDBNet").
    architecture: Option<&'static str>,
    /// The recognised network in words, or why the native engine does not run it.
    reason: String,
}

impl EngineEligibility {
    fn of(path: &std::path::Path) -> Self {
        match rave_native::recognise_file(path) {
            Ok(net) => match rave_native::backend::why_not_native(&net) {
                None => Self {
                    engine: "native",
                    architecture: Some(net.architecture.name()),
                    reason: net.to_string(),
                },
                Some(why) => Self {
                    engine: "onnxruntime",
                    architecture: Some(net.architecture.name()),
                    reason: format!("{net} is recognised, but {why}"),
                },
            },
            Err(e) => Self {
                engine: "onnxruntime",
                architecture: None,
                reason: match e {
                    Refusal::Unreadable(why) => why,
                    Refusal::NoMatch(m) => m.to_string(),
                },
            },
        }
    }

    /// "native on Hopper GPUs: SRVGGNetCompact x2 (...)" or
    /// "ONNX Runtime: not RRDBNet: node 5 ...".
    fn line(&self) -> String {
        match self.engine {
            "native" => format!("native on Hopper GPUs (else ONNX Runtime): {}", self.reason),
            _ => format!("ONNX Runtime: {}", self.reason),
        }
    }
}

/// Run `rave models`.
pub fn run(global: &GlobalArgs, args: &ModelsArgs) -> Result<i32> {
    let dirs = locate::model_dirs(global)?;
    let runtime = OrtRuntime::load(&locate::runtime_candidates(global));
    let entries: Vec<ModelEntry> = locate::installed_models(&dirs)
        .into_iter()
        .map(|(name, path)| {
            let (meta, problem) = match &runtime {
                Ok(rt) => match LoadedModel::inspect(rt, &path) {
                    Ok(m) => (Some(m), None),
                    Err(e) => (None, Some(e.to_string())),
                },
                Err(_) => (None, Some("ONNX Runtime not found: scale unknown".into())),
            };
            ModelEntry {
                engine: EngineEligibility::of(&path),
                size_bytes: std::fs::metadata(&path).map_or(0, |m| m.len()),
                default: name == locate::DEFAULT_MODEL,
                name,
                path,
                scale: meta.as_ref().map(|m| m.scale),
                precision: meta.as_ref().map(|m| match m.tensor_format {
                    PixelFormat::RgbPlanarF16 => "fp16",
                    _ => "fp32",
                }),
                fixed_batch: meta.as_ref().and_then(|m| m.fixed_batch),
                problem,
            }
        })
        .collect();
    if args.json {
        let out = serde_json::json!({"models": entries, "searched": dirs});
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(0);
    }
    if entries.is_empty() {
        outln!("no models installed; searched:");
        for d in &dirs {
            outln!("  {}", d.display());
        }
        outln!("run scripts/setup.sh to convert and install the Real-ESRGAN models");
        return Ok(0);
    }
    outln!(
        "{:<34} {:>5} {:>4} {:>5} {:>9}  path",
        "name",
        "scale",
        "io",
        "batch",
        "size"
    );
    for e in &entries {
        let scale = e.scale.map_or("?".into(), |s| format!("x{s}"));
        let batch = match (e.scale, e.fixed_batch) {
            (None, _) => "?".to_string(),
            (Some(_), None) => "any".to_string(),
            (Some(_), Some(b)) => b.to_string(),
        };
        let mark = if e.default { " (default)" } else { "" };
        outln!(
            "{:<34} {:>5} {:>4} {:>5} {:>7.1}MB  {}{mark}",
            e.name,
            scale,
            e.precision.unwrap_or("?"),
            batch,
            e.size_bytes as f64 / 1e6,
            e.path.display()
        );
        match &e.problem {
            // A model ONNX Runtime cannot take runs nowhere: its engine line would mislead.
            Some(p) => outln!("    problem: {p}"),
            None => outln!("    engine: {}", e.engine.line()),
        }
    }
    Ok(0)
}
