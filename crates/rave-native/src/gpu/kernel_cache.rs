//! NVRTC's output (PTX) kept on disk, so a later start skips NVRTC. The key is a SHA-256 of
//! everything that changes the PTX: the
//! kernel source, its file name, the target architecture, the NVRTC version and this crate's
//! version. A file appears whole or not at all (written beside, then renamed); one that
//! cannot be read or written is only a lost shortcut: the kernel is compiled as if no cache
//! existed. `RAVE_KERNEL_CACHE` names the folder (empty: no cache); by default
//! `$XDG_CACHE_HOME/rave/kernels`, else `~/.cache/rave/kernels`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::GpuError;

/// Whether a load found the kernels compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    /// Read from the cache.
    Hit,
    /// Compiled (and stored, where the cache folder is writable).
    Compiled,
}

/// The cache folder from the environment, `None` when caching is off: `RAVE_KERNEL_CACHE`
/// (empty turns caching off), else `$XDG_CACHE_HOME/rave/kernels`, else
/// `~/.cache/rave/kernels` (the home folder from `$HOME`, or the password database where it
/// is unset). A relative `XDG_CACHE_HOME` or home is ignored, as the XDG specification
/// says: it would make the working directory's files the cache, and load them.
pub fn default_dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("RAVE_KERNEL_CACHE"),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::home_dir().map(PathBuf::into_os_string),
    )
}

fn dir_from(
    explicit: Option<std::ffi::OsString>,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    match explicit {
        Some(d) if d.is_empty() => None,
        Some(d) => Some(PathBuf::from(d)),
        None => rave_core::user_dirs::base_dir(xdg, home.map(PathBuf::from), ".cache")
            .map(|d| d.join("rave/kernels")),
    }
}

/// The cache key of `source` compiled as `file` for `arch` by NVRTC `nvrtc`.
pub fn key(source: &str, file: &str, arch: &str, nvrtc: (i32, i32)) -> String {
    let mut h = Sha256::new();
    for part in [
        source,
        file,
        arch,
        &format!("nvrtc {}.{}", nvrtc.0, nvrtc.1),
        env!("CARGO_PKG_VERSION"),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The PTX for `key`: from `dir` when it holds it, else from `compile`, then stored there.
pub fn ptx(
    dir: Option<&Path>,
    key: &str,
    compile: impl FnOnce() -> Result<String, GpuError>,
) -> Result<(String, CacheUse), GpuError> {
    let file = dir.map(|d| d.join(format!("{key}.ptx")));
    if let Some(f) = &file
        && let Ok(text) = std::fs::read_to_string(f)
        && !text.is_empty()
    {
        return Ok((text, CacheUse::Hit));
    }
    let text = compile()?;
    if let (Some(d), Some(f)) = (dir, &file) {
        // One temporary file per writer: workers on several GPUs may store a key at once.
        static WRITERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = d.join(format!(".{key}.{}.{n}.tmp", std::process::id()));
        let stored = std::fs::create_dir_all(d)
            .and_then(|_| std::fs::write(&temp, &text))
            .and_then(|_| std::fs::rename(&temp, f));
        if stored.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
    }
    Ok((text, CacheUse::Compiled))
}

/// Drop the stored PTX for `key` (it did not load: damaged, or from another driver).
pub fn forget(dir: Option<&Path>, key: &str) {
    if let Some(d) = dir {
        let _ = std::fs::remove_file(d.join(format!("{key}.ptx")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rave-kcache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_second_load_reads_what_the_first_compiled() {
        let dir = scratch("hit");
        let k = key("src", "a.cu", "compute_90", (13, 0));
        let mut compiled = 0;
        let (a, first) = ptx(Some(&dir), &k, || {
            compiled += 1;
            Ok("// ptx".into())
        })
        .unwrap();
        let (b, second) = ptx(Some(&dir), &k, || {
            compiled += 1;
            Ok("// other".into())
        })
        .unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("// ptx", "// ptx"));
        assert_eq!(
            (first, second, compiled),
            (CacheUse::Compiled, CacheUse::Hit, 1)
        );
        // Nothing but the finished file is left.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(format!("{k}.ptx"))]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_input_of_the_compilation_changes_the_key() {
        let base = key("src", "a.cu", "compute_90", (13, 0));
        for other in [
            key("src2", "a.cu", "compute_90", (13, 0)),
            key("src", "b.cu", "compute_90", (13, 0)),
            key("src", "a.cu", "compute_90a", (13, 0)),
            key("src", "a.cu", "compute_90", (13, 1)),
        ] {
            assert_ne!(base, other);
        }
        // Parts are length-prefixed: moving a character between two parts changes the key.
        assert_ne!(key("ab", "c", "x", (1, 0)), key("a", "bc", "x", (1, 0)));
        assert_eq!(base.len(), 64);
    }

    #[test]
    fn an_unusable_cache_folder_only_costs_the_compilation() {
        let blocker = scratch("blocked");
        std::fs::write(&blocker, b"a file, not a folder").unwrap();
        let k = key("src", "a.cu", "compute_90", (13, 0));
        for _ in 0..2 {
            let (text, used) = ptx(Some(&blocker.join("sub")), &k, || Ok("// ptx".into())).unwrap();
            assert_eq!((text.as_str(), used), ("// ptx", CacheUse::Compiled));
        }
        std::fs::remove_file(&blocker).unwrap();
        // No cache at all, and a failed compilation is the error.
        assert_eq!(
            ptx(None, &k, || Ok("x".into())).unwrap().1,
            CacheUse::Compiled
        );
        let e = ptx(None, &k, || Err(GpuError("nvrtc: bad".into()))).unwrap_err();
        assert!(e.to_string().contains("nvrtc: bad"));
    }

    #[test]
    fn the_folder_comes_from_the_environment_in_order() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(dir_from(os(""), os("/x"), os("/h")), None);
        assert_eq!(
            dir_from(os("/k"), os("/x"), os("/h")),
            Some(PathBuf::from("/k"))
        );
        assert_eq!(
            dir_from(None, os("/x"), os("/h")),
            Some(PathBuf::from("/x/rave/kernels"))
        );
        assert_eq!(
            dir_from(None, os(""), os("/h")),
            Some(PathBuf::from("/h/.cache/rave/kernels"))
        );
        assert_eq!(dir_from(None, None, None), None);
        // Relative values would make the working directory the cache.
        assert_eq!(
            dir_from(None, os("rel"), os("/h")),
            Some(PathBuf::from("/h/.cache/rave/kernels"))
        );
        assert_eq!(dir_from(None, None, os("")), None);
        assert_eq!(dir_from(None, None, os(".")), None);
    }

    #[test]
    fn a_forgotten_entry_is_compiled_again() {
        let dir = scratch("forget");
        let k = key("src", "a.cu", "compute_90", (13, 0));
        ptx(Some(&dir), &k, || Ok("// damaged".into())).unwrap();
        forget(Some(&dir), &k);
        let (text, used) = ptx(Some(&dir), &k, || Ok("// fresh".into())).unwrap();
        assert_eq!((text.as_str(), used), ("// fresh", CacheUse::Compiled));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
