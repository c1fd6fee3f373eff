//! The output file protocol: frames are written to a hidden temporary file beside the
//! target; only a complete run renames it to the target. A cancelled run's finalized file
//! is renamed `NAME.partial.EXT`; a failed run's is deleted. So a file at the target path is
//! always complete.

use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

/// The paths one run writes.
#[derive(Debug, Clone)]
pub struct OutputTarget {
    target: PathBuf,
    temp: PathBuf,
}

impl OutputTarget {
    /// Check that `target` may be written (not the input, exists only with `overwrite`,
    /// folder present) and choose the temporary path.
    pub fn prepare(target: &Path, input: &Path, overwrite: bool) -> Result<Self> {
        let unwritable = |reason: &str| EngineError::OutputUnwritable {
            path: target.to_path_buf(),
            reason: reason.into(),
        };
        let name = target
            .file_name()
            .ok_or_else(|| unwritable("is not a file name"))?
            .to_string_lossy()
            .into_owned();
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(unwritable("its folder does not exist"));
        }
        if let (Ok(a), Ok(b)) = (input.canonicalize(), dir.canonicalize())
            && a == b.join(&name)
        {
            return Err(unwritable("is the input file; choose another output path"));
        }
        if target.is_dir() {
            return Err(unwritable("is a directory"));
        }
        if target.exists() && !overwrite {
            return Err(EngineError::OutputExists(target.to_path_buf()));
        }
        let temp = dir.join(format!(".{name}.rave-{}.tmp", std::process::id()));
        Ok(Self {
            target: target.to_path_buf(),
            temp,
        })
    }

    /// Where frames are written while the run is in progress.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where a cancelled run's finalized output goes: `NAME.partial.EXT`.
    pub fn partial_path(&self) -> PathBuf {
        let stem = self
            .target
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = match self.target.extension() {
            Some(ext) => format!("{stem}.partial.{}", ext.to_string_lossy()),
            None => format!("{stem}.partial"),
        };
        self.target.with_file_name(name)
    }

    /// The run completed: move the finished file into place.
    pub fn commit(&self) -> Result<PathBuf> {
        std::fs::rename(&self.temp, &self.target).map_err(|e| EngineError::OutputUnwritable {
            path: self.target.clone(),
            reason: format!("cannot move the finished file into place: {e}"),
        })?;
        Ok(self.target.clone())
    }

    /// The run was cancelled after finalizing what it had: keep it under the partial name.
    pub fn keep_partial(&self) -> Result<PathBuf> {
        let partial = self.partial_path();
        std::fs::rename(&self.temp, &partial).map_err(|e| EngineError::OutputUnwritable {
            path: partial.clone(),
            reason: e.to_string(),
        })?;
        Ok(partial)
    }

    /// The run failed: remove whatever was written.
    pub fn discard(&self) {
        // Nothing to do if it was never created.
        let _ = std::fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_existing_without_overwrite_and_the_input_itself() {
        let dir = std::env::temp_dir().join(format!("rave-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.mp4");
        std::fs::write(&input, b"x").unwrap();
        let out = dir.join("out.mp4");
        assert!(OutputTarget::prepare(&out, &input, false).is_ok());
        std::fs::write(&out, b"x").unwrap();
        let err = OutputTarget::prepare(&out, &input, false).unwrap_err();
        assert_eq!(err.kind(), "output_exists");
        assert!(OutputTarget::prepare(&out, &input, true).is_ok());
        let err = OutputTarget::prepare(&input, &input, true).unwrap_err();
        assert!(err.to_string().contains("is the input file"), "{err}");
        let err = OutputTarget::prepare(&dir.join("nope/out.mp4"), &input, false).unwrap_err();
        assert!(err.to_string().contains("folder does not exist"), "{err}");
        let t = OutputTarget::prepare(&dir.join("clip.mkv"), &input, false).unwrap();
        assert_eq!(t.partial_path(), dir.join("clip.partial.mkv"));
        std::fs::write(t.temp_path(), b"data").unwrap();
        assert_eq!(t.commit().unwrap(), dir.join("clip.mkv"));
        assert!(!t.temp_path().exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
