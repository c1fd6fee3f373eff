//! Paths as a job records and compares them: absolute, and the same file however spelled.

use std::path::{Path, PathBuf};

/// The absolute form of `path` (relative to the current folder).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether `a` and `b` name the same file however they are spelled (`..`, symbolic links);
/// a file that does not exist yet (an output) is compared by its folder and name.
pub fn same_path(a: &Path, b: &Path) -> bool {
    fn resolved(p: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(p).ok().or_else(|| {
            let dir = std::fs::canonicalize(p.parent()?).ok()?;
            Some(dir.join(p.file_name()?))
        })
    }
    a == b || matches!((resolved(a), resolved(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::same_path;

    #[test]
    fn one_file_is_the_same_job_however_it_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("in.mp4"), b"x").unwrap();
        std::os::unix::fs::symlink(d.join("in.mp4"), d.join("link.mp4")).unwrap();
        assert!(same_path(&d.join("in.mp4"), &d.join("sub/../in.mp4")));
        assert!(same_path(&d.join("in.mp4"), &d.join("link.mp4")));
        // An output that does not exist yet: by its folder and name.
        assert!(same_path(&d.join("out.mp4"), &d.join("sub/../out.mp4")));
        assert!(!same_path(&d.join("in.mp4"), &d.join("out.mp4")));
        assert!(!same_path(&d.join("sub/out.mp4"), &d.join("out.mp4")));
    }
}
