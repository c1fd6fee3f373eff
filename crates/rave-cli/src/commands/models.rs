//! `rave models`: list installed models with their real scale, and say which engine each is
//! eligible for (the native engine needs a recognised architecture). The native recogniser
//! describes the models it takes; ONNX Runtime is loaded only to open the others.

use rave_core::error::{EngineError, Result};
use rave_core::types::PixelFormat;
use rave_native::{Refusal, Storage};
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
    /// Fixed batch size, or None when the batch axis is dynamic (micro-batching possible);
    /// always None for a model the native engine runs (as ONNX Runtime is not asked).
    fixed_batch: Option<u32>,
    /// What its frame sides must be multiples of (frames are padded to one); 1 for any
    /// size, and for a model the native engine runs.
    side_multiple: Option<u32>,
    /// The one width its input takes, when that axis is fixed (None: any, or unknown).
    fixed_width: Option<u32>,
    /// The one height its input takes, when that axis is fixed (None: any, or unknown).
    fixed_height: Option<u32>,
    default: bool,
    problem: Option<String>,
    /// Which inference engine the model is eligible for, and why.
    engine: EngineEligibility,
}

impl ModelEntry {
    /// What sizes the model takes, where not any: "64x48 only (frames are cut into tiles of
    /// that size, smaller ones padded to it)", "sides that are multiples of 4 (frames are
    /// padded to them)", "height 48 only, any width".
    fn input_line(&self) -> Option<String> {
        let multiple = self.side_multiple.filter(|m| *m > 1);
        let sides = |m: u32| format!("sides that are multiples of {m} (frames are padded to them)");
        let line = match (self.fixed_width, self.fixed_height) {
            (Some(w), Some(h)) => format!(
                "{w}x{h} only (frames are cut into tiles of that size, smaller ones padded to it)"
            ),
            (Some(w), None) => format!(
                "width {w} only, {}",
                multiple.map_or("any height".into(), |m| format!("heights multiples of {m}"))
            ),
            (None, Some(h)) => format!(
                "height {h} only, {}",
                multiple.map_or("any width".into(), |m| format!("widths multiples of {m}"))
            ),
            (None, None) => sides(multiple?),
        };
        Some(line)
    }
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

/// What the native recogniser read of a model it runs: scale and image tensor type.
struct NativeFacts {
    scale: u32,
    storage: Storage,
}

impl EngineEligibility {
    /// The engine for the model at `path`, and its facts when the native engine runs it.
    fn of(path: &std::path::Path) -> (Self, Option<NativeFacts>) {
        let ort = |e| (e, None);
        match rave_native::recognise_file(path) {
            Ok(net) => match rave_native::backend::why_not_native(&net) {
                None => (
                    Self {
                        engine: "native",
                        architecture: Some(net.architecture.name()),
                        reason: net.to_string(),
                    },
                    Some(NativeFacts {
                        scale: net.scale,
                        storage: net.storage,
                    }),
                ),
                Some(why) => ort(Self {
                    engine: "onnxruntime",
                    architecture: Some(net.architecture.name()),
                    reason: format!("{net} is recognised, but {why}"),
                }),
            },
            Err(e) => ort(Self {
                engine: "onnxruntime",
                architecture: None,
                reason: match e {
                    Refusal::Unreadable(why) => why,
                    Refusal::NoMatch(m) => m.to_string(),
                },
            }),
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
    let candidates = locate::runtime_candidates(global);
    // A library named by --ort-lib or ORT_DYLIB_PATH must load, here as in a run (no model
    // would be shown as "ONNX Runtime not found" while one was named).
    if candidates.iter().any(|c| c.explicit) {
        OrtRuntime::load(&candidates)?;
    }
    let entries: Vec<ModelEntry> = locate::installed_models(&dirs)
        .into_iter()
        .map(|(name, path)| {
            let (engine, native) = EngineEligibility::of(&path);
            let mut entry = ModelEntry {
                engine,
                size_bytes: std::fs::metadata(&path).map_or(0, |m| m.len()),
                default: name == locate::DEFAULT_MODEL,
                name,
                path,
                scale: None,
                precision: None,
                fixed_batch: None,
                side_multiple: None,
                fixed_width: None,
                fixed_height: None,
                problem: None,
            };
            if let Some(net) = native {
                entry.scale = Some(net.scale);
                entry.side_multiple = Some(1);
                entry.precision = Some(match net.storage {
                    Storage::F16 => "fp16",
                    Storage::F32 => "fp32",
                });
                return entry;
            }
            // Loaded by the first model that needs it; the later ones get the same runtime.
            match OrtRuntime::load(&candidates).and_then(|rt| LoadedModel::inspect(rt, &entry.path))
            {
                Ok(m) => {
                    entry.scale = Some(m.scale);
                    entry.precision = Some(match m.tensor_format {
                        PixelFormat::RgbPlanarF16 => "fp16",
                        _ => "fp32",
                    });
                    entry.fixed_batch = m.fixed_batch;
                    entry.side_multiple = Some(m.side_multiple);
                    let ((min_h, min_w), (max_h, max_w)) = (m.min_input_hw, m.max_input_hw);
                    entry.fixed_width = (min_w == max_w).then_some(max_w);
                    entry.fixed_height = (min_h == max_h).then_some(max_h);
                }
                Err(EngineError::RuntimeLibrary(_)) => {
                    entry.problem = Some("ONNX Runtime not found: scale unknown".into());
                }
                Err(e) => entry.problem = Some(e.to_string()),
            }
            entry
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
        if let Some(input) = e.input_line() {
            outln!("    input: {input}");
        }
    }
    Ok(0)
}
