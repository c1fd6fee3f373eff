//! Where RAVE finds things: the install folder, the ONNX Runtime library candidates in
//! order, the model folders, and `-m NAME` resolution. Environment variables are read here
//! and nowhere else.

use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};
use rave_tensorrt::RuntimeCandidate;
use rave_tensorrt::provider_paths::{self, ProviderCandidate, SearchInputs};

use crate::args::GlobalArgs;

/// The model used when `-m` is not given.
pub const DEFAULT_MODEL: &str = "realesr-animevideov3-x2";

/// RAVE's install folder: `$RAVE_HOME`, else `$XDG_DATA_HOME/rave`, else
/// `~/.local/share/rave`, the home folder being `$HOME` or, where that is unset (a service's
/// bare environment), the user's entry in the password database. `None` where no home
/// folder is known: never the working directory, whose libraries would then be loaded.
pub fn install_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("RAVE_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(home));
    }
    rave_core::user_dirs::xdg_base("XDG_DATA_HOME", ".local/share").map(|d| d.join("rave"))
}

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// Where to look for libonnxruntime.so, in order: the library `--ort-lib` (else
/// `ORT_DYLIB_PATH`) names, which must load, then the default places.
pub fn runtime_candidates(global: &GlobalArgs) -> Vec<RuntimeCandidate> {
    let mut out = Vec::new();
    // A relative path means the working directory (the loader would try the executable's
    // folder first).
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if let Some(p) = &global.ort_lib {
        out.push(RuntimeCandidate::explicit(absolute(p), "--ort-lib"));
    } else if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        out.push(RuntimeCandidate::explicit(
            absolute(Path::new(&p)),
            "ORT_DYLIB_PATH",
        ));
    }
    if let Some(dir) = exe_dir() {
        out.push(RuntimeCandidate::new(
            dir.join("libonnxruntime.so"),
            "next to the executable",
        ));
    }
    if let Some(dir) = install_dir() {
        out.push(RuntimeCandidate::new(
            dir.join("lib/libonnxruntime.so"),
            "RAVE install folder",
        ));
    }
    out
}

/// Folders searched for models, in order. A folder named by `--models-dir` or
/// `RAVE_MODELS_DIR` must exist (a usage error otherwise); the default ones may not.
pub fn model_dirs(global: &GlobalArgs) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if let Some(d) = &global.models_dir {
        out.push(existing_folder(
            d,
            &format!("--models-dir {}", d.display()),
        )?);
    }
    if let Some(d) = std::env::var_os("RAVE_MODELS_DIR").filter(|v| !v.is_empty()) {
        let d = PathBuf::from(d);
        out.push(existing_folder(
            &d,
            &format!("RAVE_MODELS_DIR={}", d.display()),
        )?);
    }
    if let Some(dir) = exe_dir() {
        out.push(dir.join("models"));
    }
    out.extend(install_dir().map(|dir| dir.join("models")));
    Ok(out)
}

/// `dir` when it is a folder; else a usage error naming `given` (where it came from).
fn existing_folder(dir: &Path, given: &str) -> Result<PathBuf> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
        Ok(_) => Err(EngineError::Config(format!(
            "{given}: not a folder; name the folder that holds the .onnx models"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EngineError::Config(format!(
            "{given}: no such folder; name the folder that holds the .onnx models"
        ))),
        Err(e) => Err(EngineError::Config(format!("{given}: cannot read it: {e}"))),
    }
}

/// Every `.onnx` file (`.ONNX` too) in the model folders: (name, path), first folder wins on a name clash.
pub fn installed_models(dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut here: Vec<(String, PathBuf)> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x.eq_ignore_ascii_case("onnx"))
                    && p.is_file()
            })
            .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
            .filter(|(n, _)| !found.iter().any(|(f, _)| f == n))
            .collect();
        here.sort();
        found.extend(here);
    }
    found
}

/// Resolve `-m`: an existing path, or an installed model name.
pub fn resolve_model(spec: &str, dirs: &[PathBuf]) -> Result<PathBuf> {
    let as_path = Path::new(spec);
    let looks_like_path = spec.contains('/') || spec.to_ascii_lowercase().ends_with(".onnx");
    if looks_like_path || as_path.exists() {
        if as_path.exists() {
            return Ok(as_path.to_path_buf());
        }
        return Err(EngineError::ModelNotFound(format!("{spec}: no such file")));
    }
    let models = installed_models(dirs);
    if let Some((_, p)) = models.iter().find(|(n, _)| n == spec) {
        return Ok(p.clone());
    }
    let names: Vec<&str> = models.iter().map(|(n, _)| n.as_str()).collect();
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(EngineError::ModelNotFound(if names.is_empty() {
        format!(
            "{spec}: no models installed (searched {}); run scripts/setup.sh or pass -m PATH.onnx",
            searched.join(", ")
        )
    } else {
        format!(
            "{spec}: not installed; installed models: {}",
            names.join(", ")
        )
    }))
}

/// Where to look for the GPU provider libraries, in the seed's order, starting beside the
/// ONNX Runtime library in use.
pub fn provider_candidates(runtime_library: &Path) -> Vec<ProviderCandidate> {
    let mut inputs = provider_search();
    inputs.runtime_dir = runtime_library.parent().map(Path::to_path_buf);
    provider_paths::candidates(&inputs)
}

/// The provider search inputs from the environment (the runtime's folder is added by whoever
/// loads the runtime).
pub fn provider_search() -> SearchInputs {
    let env_path = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    SearchInputs {
        runtime_dir: None,
        ort_dylib_path: env_path("ORT_DYLIB_PATH"),
        ort_lib_location: env_path("ORT_LIB_LOCATION"),
        exe_dir: exe_dir(),
        cache_dirs: env_path("HOME")
            .map(|h| provider_paths::ort_cache_dirs_newest_first(&h))
            .unwrap_or_default(),
        on_wsl: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .is_ok_and(|r| provider_paths::is_wsl_release(&r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_in_folder_order_and_unknown_names_list_choices() {
        let base = std::env::temp_dir().join(format!("rave-models-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("m1.onnx"), b"").unwrap();
        std::fs::write(b.join("m1.onnx"), b"").unwrap();
        std::fs::write(b.join("m2.onnx"), b"").unwrap();
        std::fs::write(b.join("UPPER.ONNX"), b"").unwrap();
        let dirs = vec![a.clone(), b.clone()];
        assert_eq!(resolve_model("m1", &dirs).unwrap(), a.join("m1.onnx"));
        assert_eq!(resolve_model("m2", &dirs).unwrap(), b.join("m2.onnx"));
        assert_eq!(resolve_model("UPPER", &dirs).unwrap(), b.join("UPPER.ONNX"));
        let err = resolve_model("nope", &dirs).unwrap_err().to_string();
        assert!(err.contains("m1, UPPER, m2"), "{err}");
        let err = resolve_model("x/missing.onnx", &dirs).unwrap_err();
        assert_eq!(err.kind(), "model_not_found");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn an_explicit_models_dir_must_be_a_folder() {
        let base = std::env::temp_dir().join(format!("rave-models-dir-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        assert_eq!(existing_folder(&base, "--models-dir x").unwrap(), base);
        let err = existing_folder(&base.join("nope"), "--models-dir /nope").unwrap_err();
        assert_eq!(err.family().exit_code(), 2);
        assert!(
            err.to_string()
                .contains("--models-dir /nope: no such folder"),
            "{err}"
        );
        let file = base.join("f.onnx");
        std::fs::write(&file, b"").unwrap();
        let err = existing_folder(&file, "RAVE_MODELS_DIR=f").unwrap_err();
        assert!(
            err.to_string().contains("RAVE_MODELS_DIR=f: not a folder"),
            "{err}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
