//! `rave models`: list installed models, loading each to report its real scale.

use rave_core::backend::HostUpscaleBackend;
use rave_core::error::Result;
use rave_tensorrt::{CpuBackend, ModelOptions, OrtRuntime};
use serde::Serialize;

use crate::args::{GlobalArgs, ModelsArgs};
use crate::locate;

/// One installed model.
#[derive(Debug, Serialize)]
struct ModelEntry {
    name: String,
    path: std::path::PathBuf,
    size_bytes: u64,
    scale: Option<u32>,
    default: bool,
    problem: Option<String>,
}

/// Run `rave models`.
pub fn run(global: &GlobalArgs, args: &ModelsArgs) -> Result<i32> {
    let dirs = locate::model_dirs(global);
    let runtime = OrtRuntime::load(&locate::runtime_candidates(global));
    let entries: Vec<ModelEntry> = locate::installed_models(&dirs)
        .into_iter()
        .map(|(name, path)| {
            let (scale, problem) = match &runtime {
                Ok(rt) => match CpuBackend::new(rt, &path, &ModelOptions { threads: 1 }) {
                    Ok(b) => (Some(b.metadata().scale), None),
                    Err(e) => (None, Some(e.to_string())),
                },
                Err(_) => (None, Some("ONNX Runtime not found: scale unknown".into())),
            };
            ModelEntry {
                size_bytes: std::fs::metadata(&path).map_or(0, |m| m.len()),
                default: name == locate::DEFAULT_MODEL,
                name,
                path,
                scale,
                problem,
            }
        })
        .collect();
    if args.json {
        let out = serde_json::json!({"models": entries, "searched": dirs});
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(0);
    }
    if entries.is_empty() {
        println!("no models installed; searched:");
        for d in &dirs {
            println!("  {}", d.display());
        }
        println!("run scripts/setup.sh to convert and install the Real-ESRGAN models");
        return Ok(0);
    }
    println!("{:<28} {:>5} {:>9}  path", "name", "scale", "size");
    for e in &entries {
        let scale = e.scale.map_or("?".into(), |s| format!("x{s}"));
        let mark = if e.default { " (default)" } else { "" };
        println!(
            "{:<28} {:>5} {:>7.1}MB  {}{mark}",
            e.name,
            scale,
            e.size_bytes as f64 / 1e6,
            e.path.display()
        );
        if let Some(p) = &e.problem {
            println!("    problem: {p}");
        }
    }
    Ok(0)
}
