//! Where ONNX Runtime's GPU provider libraries are: the ordered candidate folders of the seed
//! (overrides, the executable's folder and its `deps`, ort's download cache newest first, with
//! the cache ahead of the executable on WSL2), the first folder holding the required pair
//! (`libonnxruntime_providers_shared.so` + the provider), and an error that lists every
//! candidate checked, in order. The CLI gathers the inputs (environment, /proc); nothing here
//! reads the environment.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

/// The provider libraries RAVE can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// `libonnxruntime_providers_cuda.so`.
    Cuda,
    /// `libonnxruntime_providers_tensorrt.so`.
    TensorRt,
}

/// The bridge library every provider needs beside it.
pub const SHARED_BRIDGE: &str = "libonnxruntime_providers_shared.so";

impl ProviderKind {
    /// File name of the provider library.
    pub fn soname(self) -> &'static str {
        match self {
            ProviderKind::Cuda => "libonnxruntime_providers_cuda.so",
            ProviderKind::TensorRt => "libonnxruntime_providers_tensorrt.so",
        }
    }

    /// ONNX Runtime's name of the provider.
    pub fn label(self) -> &'static str {
        match self {
            ProviderKind::Cuda => "CUDAExecutionProvider",
            ProviderKind::TensorRt => "TensorrtExecutionProvider",
        }
    }
}

/// What the search starts from; the CLI fills it.
#[derive(Debug, Clone, Default)]
pub struct SearchInputs {
    /// The folder of the ONNX Runtime library in use (providers load from beside it).
    pub runtime_dir: Option<PathBuf>,
    /// `ORT_DYLIB_PATH` (a library file or a folder).
    pub ort_dylib_path: Option<PathBuf>,
    /// `ORT_LIB_LOCATION` (a folder).
    pub ort_lib_location: Option<PathBuf>,
    /// The folder of the running executable.
    pub exe_dir: Option<PathBuf>,
    /// ort's download cache folders, newest first (see `ort_cache_dirs_newest_first`).
    pub cache_dirs: Vec<PathBuf>,
    /// Running under WSL2 (the cache then comes before the executable's folder).
    pub on_wsl: bool,
}

/// One folder to look in and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCandidate {
    /// The folder.
    pub dir: PathBuf,
    /// Its origin, e.g. "ORT_DYLIB_PATH" or "exe_dir/deps".
    pub origin: &'static str,
}

/// A folder where an override names a file: the file's folder.
fn as_dir(p: &Path) -> PathBuf {
    if p.is_file() {
        p.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        p.to_path_buf()
    }
}

/// The folders to search, in order, without repeats.
pub fn candidates(inputs: &SearchInputs) -> Vec<ProviderCandidate> {
    let mut out = Vec::new();
    let mut push = |dir: PathBuf, origin: &'static str| out.push(ProviderCandidate { dir, origin });
    if let Some(d) = &inputs.ort_dylib_path {
        push(as_dir(d), "ORT_DYLIB_PATH");
    }
    if let Some(d) = &inputs.ort_lib_location {
        push(as_dir(d), "ORT_LIB_LOCATION");
    }
    if let Some(d) = &inputs.runtime_dir {
        push(d.clone(), "onnxruntime_library_dir");
    }
    let exe = |push: &mut dyn FnMut(PathBuf, &'static str)| {
        if let Some(d) = &inputs.exe_dir {
            push(d.clone(), "exe_dir");
            push(d.join("deps"), "exe_dir/deps");
        }
    };
    if inputs.on_wsl {
        for d in &inputs.cache_dirs {
            push(d.clone(), "ort_cache_newest");
        }
        exe(&mut push);
    } else {
        exe(&mut push);
        for d in &inputs.cache_dirs {
            push(d.clone(), "ort_cache_newest");
        }
    }
    let mut seen = HashSet::new();
    out.retain(|c| seen.insert(c.dir.clone()));
    out
}

/// `1:ORIGIN:DIR, 2:...` — the order the folders were checked in.
pub fn render(candidates: &[ProviderCandidate]) -> String {
    if candidates.is_empty() {
        return "none".into();
    }
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}:{}:{}", i + 1, c.origin, c.dir.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first candidate holding both the bridge and `kind`'s library.
pub fn resolve(kind: ProviderKind, candidates: &[ProviderCandidate]) -> Result<ProviderCandidate> {
    candidates
        .iter()
        .find(|c| c.dir.join(SHARED_BRIDGE).is_file() && c.dir.join(kind.soname()).is_file())
        .cloned()
        .ok_or_else(|| {
            EngineError::RuntimeLibrary(format!(
                "{}: no folder holds {} together with {}; checked in order: [{}]; set ORT_DYLIB_PATH or ORT_LIB_LOCATION to the folder of the onnxruntime-gpu libraries",
                kind.label(),
                kind.soname(),
                SHARED_BRIDGE,
                render(candidates)
            ))
        })
}

/// ort's download cache (`HOME/.cache/ort.pyke.io/dfbin/TRIPLE/HASH`), newest first.
pub fn ort_cache_dirs_newest_first(home: &Path) -> Vec<PathBuf> {
    let base = home.join(".cache/ort.pyke.io/dfbin");
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|t| t.path().is_dir())
        .flat_map(|t| std::fs::read_dir(t.path()).into_iter().flatten().flatten())
        .map(|h| h.path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let modified = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, p)
        })
        .collect();
    dirs.sort_by(|a, b| b.cmp(a));
    dirs.into_iter().map(|(_, p)| p).collect()
}

/// Whether a kernel release string (/proc/sys/kernel/osrelease) is WSL2's.
pub fn is_wsl_release(osrelease: &str) -> bool {
    osrelease.to_ascii_lowercase().contains("microsoft")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scratch(PathBuf);
    impl Scratch {
        fn new(tag: &str) -> Self {
            let p =
                std::env::temp_dir().join(format!("rave-providers-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Self(p)
        }
        fn pair(&self, sub: &str, kind: ProviderKind) -> PathBuf {
            let d = self.0.join(sub);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(SHARED_BRIDGE), b"").unwrap();
            std::fs::write(d.join(kind.soname()), b"").unwrap();
            d
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn override_wins() {
        let s = Scratch::new("override");
        let over = s.pair("override", ProviderKind::TensorRt);
        let exe = s.pair("exe", ProviderKind::TensorRt);
        let inputs = SearchInputs {
            ort_dylib_path: Some(over.clone()),
            exe_dir: Some(exe),
            ..Default::default()
        };
        let got = resolve(ProviderKind::TensorRt, &candidates(&inputs)).unwrap();
        assert_eq!((got.dir, got.origin), (over, "ORT_DYLIB_PATH"));
    }

    #[test]
    fn a_library_file_override_means_its_folder() {
        let s = Scratch::new("file");
        let dir = s.pair("ort", ProviderKind::Cuda);
        std::fs::write(dir.join("libonnxruntime.so"), b"").unwrap();
        let inputs = SearchInputs {
            ort_dylib_path: Some(dir.join("libonnxruntime.so")),
            ..Default::default()
        };
        assert_eq!(
            resolve(ProviderKind::Cuda, &candidates(&inputs))
                .unwrap()
                .dir,
            dir
        );
    }

    #[test]
    fn fallback_takes_the_first_folder_with_the_pair() {
        let s = Scratch::new("fallback");
        let exe = s.0.join("exe");
        let deps = s.pair("exe/deps", ProviderKind::Cuda);
        let cache = s.pair("cache", ProviderKind::Cuda);
        let inputs = SearchInputs {
            exe_dir: Some(exe),
            cache_dirs: vec![cache],
            ..Default::default()
        };
        let got = resolve(ProviderKind::Cuda, &candidates(&inputs)).unwrap();
        assert_eq!((got.dir, got.origin), (deps, "exe_dir/deps"));
        // A folder with only the bridge (no provider) does not count.
        assert!(resolve(ProviderKind::TensorRt, &candidates(&inputs)).is_err());
    }

    #[test]
    fn wsl_puts_the_cache_before_the_executable_and_repeats_are_dropped() {
        let inputs = SearchInputs {
            runtime_dir: Some("/opt/ort".into()),
            ort_lib_location: Some("/opt/ort".into()),
            exe_dir: Some("/app".into()),
            cache_dirs: vec!["/c/new".into(), "/c/old".into()],
            on_wsl: true,
            ..Default::default()
        };
        let order: Vec<String> = candidates(&inputs)
            .iter()
            .map(|c| c.dir.display().to_string())
            .collect();
        assert_eq!(order, ["/opt/ort", "/c/new", "/c/old", "/app", "/app/deps"]);
        let plain = SearchInputs {
            on_wsl: false,
            ..inputs
        };
        let order: Vec<String> = candidates(&plain)
            .iter()
            .map(|c| c.dir.display().to_string())
            .collect();
        assert_eq!(order, ["/opt/ort", "/app", "/app/deps", "/c/new", "/c/old"]);
        assert!(is_wsl_release("5.15.153.1-microsoft-standard-WSL2"));
        assert!(!is_wsl_release("6.1.0-18-amd64"));
    }

    #[test]
    fn failure_lists_every_candidate_in_order() {
        let inputs = SearchInputs {
            ort_dylib_path: Some("/nowhere/a".into()),
            ort_lib_location: Some("/nowhere/b".into()),
            exe_dir: Some("/nowhere/exe".into()),
            ..Default::default()
        };
        let err = resolve(ProviderKind::TensorRt, &candidates(&inputs))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[1:ORT_DYLIB_PATH:/nowhere/a, 2:ORT_LIB_LOCATION:/nowhere/b, 3:exe_dir:/nowhere/exe, 4:exe_dir/deps:/nowhere/exe/deps]"),
            "{err}"
        );
        assert!(
            err.contains("libonnxruntime_providers_tensorrt.so"),
            "{err}"
        );
        assert_eq!(render(&[]), "none");
    }

    #[test]
    fn cache_dirs_come_newest_first() {
        let s = Scratch::new("cache");
        let base =
            s.0.join(".cache/ort.pyke.io/dfbin/x86_64-unknown-linux-gnu");
        let old = base.join("old");
        let new = base.join("new");
        std::fs::create_dir_all(&old).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::create_dir_all(&new).unwrap();
        assert_eq!(ort_cache_dirs_newest_first(&s.0), vec![new, old]);
        assert!(ort_cache_dirs_newest_first(Path::new("/nonexistent")).is_empty());
    }
}
