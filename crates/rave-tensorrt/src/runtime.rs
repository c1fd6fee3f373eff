//! Finding and loading `libonnxruntime.so` at run time (ort's `load-dynamic`), once per
//! process, from an ordered list of candidates the caller builds; failure lists them all, and
//! a candidate the user named that does not load is the error at once. ONNX Runtime's own
//! log goes to `tracing` at debug level, so by default only RAVE speaks.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::sync::Arc;

use ort::environment::Environment;
use ort::logging::LogLevel;
use rave_core::error::{EngineError, Result};

/// One place the runtime library may be, and where that place came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeCandidate {
    /// Path of the library file.
    pub path: PathBuf,
    /// Where the candidate came from (e.g. "ORT_DYLIB_PATH", "next to the executable").
    pub origin: String,
    /// Named by the user (`--ort-lib`, `ORT_DYLIB_PATH`): if it does not load, that is the
    /// error; the later candidates are not tried.
    pub explicit: bool,
}

impl RuntimeCandidate {
    /// A candidate with its origin.
    pub fn new(path: impl Into<PathBuf>, origin: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            origin: origin.into(),
            explicit: false,
        }
    }

    /// A candidate the user named: it must load.
    pub fn explicit(path: impl Into<PathBuf>, origin: impl Into<String>) -> Self {
        Self {
            explicit: true,
            ..Self::new(path, origin)
        }
    }

    /// The error for an explicit candidate that is not a file, if it is one.
    fn named_but_missing(&self) -> Option<String> {
        (self.explicit && !self.path.is_file()).then(|| {
            self.unusable(match self.path.exists() {
                true => "not a file",
                false => "no such file",
            })
        })
    }

    /// The error for an explicit candidate that cannot be used.
    fn unusable(&self, why: &str) -> String {
        format!(
            "{} (from {}): cannot use it as the ONNX Runtime library: {why}; point {} at libonnxruntime.so 1.31, or drop it to use the installed one",
            self.path.display(),
            self.origin,
            self.origin
        )
    }
}

/// The loaded ONNX Runtime: the library that was used and the environment sessions share.
#[derive(Debug)]
pub struct OrtRuntime {
    library: PathBuf,
    environment: Environment,
}

static RUNTIME: OnceLock<std::result::Result<OrtRuntime, String>> = OnceLock::new();

impl OrtRuntime {
    /// Load the first existing candidate (only the first call loads; later calls return the
    /// same runtime). The error names every candidate checked, in order, and what was wrong.
    pub fn load(candidates: &[RuntimeCandidate]) -> Result<&'static OrtRuntime> {
        RUNTIME
            .get_or_init(|| Self::load_first(candidates))
            .as_ref()
            .map_err(|e| EngineError::RuntimeLibrary(e.clone()))
    }

    /// The library file in use.
    pub fn library(&self) -> &Path {
        &self.library
    }

    /// The environment sessions are created in.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// Check, without loading anything, that every candidate the user named is a file: a
    /// mistyped `--ort-lib` is the error even where the engine chosen needs no ONNX Runtime.
    /// Whether it loads is known only once [`OrtRuntime::load`] tries it.
    pub fn check_named(candidates: &[RuntimeCandidate]) -> Result<()> {
        match candidates
            .iter()
            .find_map(RuntimeCandidate::named_but_missing)
        {
            Some(e) => Err(EngineError::RuntimeLibrary(e)),
            None => Ok(()),
        }
    }

    fn load_first(candidates: &[RuntimeCandidate]) -> std::result::Result<OrtRuntime, String> {
        let mut checked = Vec::new();
        for c in candidates {
            if let Some(e) = c.named_but_missing() {
                return Err(e);
            }
            if !c.path.is_file() {
                checked.push(format!("{} ({}): not found", c.path.display(), c.origin));
                continue;
            }
            match Self::load_path(&c.path) {
                Ok(rt) => return Ok(rt),
                Err(e) if c.explicit => return Err(c.unusable(&e)),
                Err(e) => checked.push(format!("{} ({}): {e}", c.path.display(), c.origin)),
            }
        }
        Err(missing_runtime_message(&checked))
    }

    fn load_path(path: &Path) -> std::result::Result<OrtRuntime, String> {
        let builder = ort::init_from(path).map_err(|e| load_error_text(&e))?;
        let environment = builder
            .with_name("rave")
            .with_logger(Arc::new(forward_log))
            // No usage data leaves the machine, and no session file is left in TMPDIR.
            .with_telemetry(false)
            .build()
            .map_err(|e| e.to_string())?;
        // The logger is registered at the verbose level; only warnings and errors are
        // worth formatting.
        environment.set_log_level(LogLevel::Warning);
        Ok(OrtRuntime {
            library: path.to_path_buf(),
            environment,
        })
    }
}

/// The environment variable that turns ONNX Runtime's telemetry off. Since 1.29 the
/// runtime's Linux build queues usage events for Microsoft's collector (a device id and an
/// event store under `~/.cache/Microsoft`, a `.ses` file in the temporary folder) unless
/// this is `1` when the library starts; disabling it on the environment afterwards is too
/// late. `rave` sets it for itself (see the CLI's `main`) unless the user set it.
pub const TELEMETRY_OPT_OUT: &str = "ORT_DISABLE_TELEMETRY";

/// The loader's error with the system's reason (dlopen's message is the error's source).
fn load_error_text(e: &ort::LoadDynamicError) -> String {
    let why = match e {
        ort::LoadDynamicError::Dlopen { error, .. } => std::error::Error::source(error),
        _ => None,
    };
    match why {
        Some(why) => format!("{e}: {why}"),
        None => e.to_string(),
    }
}

/// ONNX Runtime's log lines, as `tracing` debug events: RAVE reports failures itself (one
/// line), so the runtime's own coloured lines are shown only with `-vv` / `RAVE_LOG`.
fn forward_log(level: LogLevel, category: &str, _id: &str, location: &str, message: &str) {
    tracing::debug!(target: "onnxruntime", ?level, category, location, "{message}");
}

/// The error text when no runtime library could be loaded.
pub fn missing_runtime_message(checked: &[String]) -> String {
    let mut msg = String::from(
        "ONNX Runtime library (libonnxruntime.so 1.31) not found; run scripts/setup.sh or set ORT_DYLIB_PATH. Checked, in order:",
    );
    if checked.is_empty() {
        msg.push_str(" (no candidates)");
    }
    for (i, c) in checked.iter().enumerate() {
        msg.push_str(&format!(" [{}] {c}", i + 1));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_lists_every_candidate_in_order() {
        let msg = OrtRuntime::load_first(&[
            RuntimeCandidate::new("/nonexistent/a/libonnxruntime.so", "ORT_DYLIB_PATH"),
            RuntimeCandidate::new("/nonexistent/b/libonnxruntime.so", "next to the executable"),
        ])
        .unwrap_err();
        let a = msg.find("/nonexistent/a").unwrap();
        let b = msg.find("/nonexistent/b").unwrap();
        assert!(a < b, "{msg}");
        assert!(msg.contains("ORT_DYLIB_PATH): not found"), "{msg}");
        assert!(msg.contains("set ORT_DYLIB_PATH"), "{msg}");
    }

    #[test]
    fn an_explicit_candidate_that_fails_is_the_error_and_stops_the_search() {
        let dir = std::env::temp_dir();
        let msg = OrtRuntime::load_first(&[
            RuntimeCandidate::explicit("/nonexistent/nope.so", "--ort-lib"),
            RuntimeCandidate::new("/nonexistent/b/libonnxruntime.so", "RAVE install folder"),
        ])
        .unwrap_err();
        assert!(
            msg.starts_with("/nonexistent/nope.so (from --ort-lib): cannot use it")
                && msg.contains("no such file"),
            "{msg}"
        );
        assert!(!msg.contains("RAVE install folder"), "{msg}");
        let msg = OrtRuntime::load_first(&[RuntimeCandidate::explicit(&dir, "ORT_DYLIB_PATH")])
            .unwrap_err();
        assert!(
            msg.contains("(from ORT_DYLIB_PATH)") && msg.contains("not a file"),
            "{msg}"
        );
    }

    #[test]
    fn a_named_candidate_is_checked_to_be_a_file_without_loading_it() {
        let named = |p: &str| RuntimeCandidate::explicit(p, "--ort-lib");
        let e = OrtRuntime::check_named(&[named("/nonexistent/nope.so")]).unwrap_err();
        assert!(
            e.to_string().contains("(from --ort-lib)") && e.to_string().contains("no such file"),
            "{e}"
        );
        // A file is enough here (whether it loads is the loader's question), and the default
        // places are not the user's to get right.
        OrtRuntime::check_named(&[named("/etc/passwd")]).unwrap();
        OrtRuntime::check_named(&[RuntimeCandidate::new(
            "/nonexistent/a.so",
            "RAVE install folder",
        )])
        .unwrap();
    }
}
