//! Writing a work folder's files so that they survive a crash or a power loss whole: a
//! synced temporary file renamed into place (over the old one, or only where none is), the
//! folder synced after; and the error that names the work-folder file that failed.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

use crate::no_replace::sync_folder_of;

/// Write `bytes` to `path` atomically: a temporary file beside it, synced, renamed over it,
/// and the folder synced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = synced_beside(path, bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| work_file_unwritable(path, &e))?;
    sync_folder_of(path);
    Ok(())
}

/// `bytes` written and synced to a temporary file beside `path`, returned.
fn synced_beside(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let io = |e: std::io::Error| work_file_unwritable(path, &e);
    let mut file = File::create(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(tmp)
}

/// [`write_atomically`] where no file is named `path`; whether it was written (`false`
/// when one is, left as it is).
pub fn write_atomically_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    let tmp = synced_beside(path, bytes)?;
    let io = |e: std::io::Error| work_file_unwritable(path, &e);
    match crate::no_replace::rename_no_replace(&tmp, path) {
        Ok(()) => {
            sync_folder_of(path);
            Ok(true)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            match e.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(false),
                _ => Err(io(e)),
            }
        }
    }
}

/// Sync `path`'s file data, then rename it to `to` and sync the folder, so the new name
/// survives a power loss with the data under it.
pub fn sync_and_rename(path: &Path, to: &Path) -> Result<()> {
    let io = |e: std::io::Error| work_file_unwritable(to, &e);
    File::open(path).and_then(|f| f.sync_all()).map_err(io)?;
    std::fs::rename(path, to).map_err(io)?;
    sync_folder_of(to);
    Ok(())
}

/// The error for a work folder file (`path`) that could not be written: which file it is,
/// the system's reason, and for a full disk where else the work can go.
fn work_file_unwritable(path: &Path, e: &std::io::Error) -> EngineError {
    let full = matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    );
    EngineError::OutputUnwritable {
        path: path.to_path_buf(),
        reason: format!(
            "{e} (a file of the work folder, where segments wait to be put together){}",
            match full {
                true =>
                    "; free space there, or give --work a folder on another disk (for one input: -i IN -o OUT --work DIR)",
                false => "",
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_under_the_work_folder_says_where_else_the_work_can_go() {
        let at = Path::new("/w/.out.mkv.rave-work/manifest.json");
        let full = work_file_unwritable(at, &std::io::Error::from_raw_os_error(28)).to_string();
        assert!(
            full.starts_with(
                "/w/.out.mkv.rave-work/manifest.json: cannot write output: No space left on device"
            ) && full.contains("a file of the work folder")
                && full.ends_with(
                    "give --work a folder on another disk (for one input: -i IN -o OUT --work DIR)"
                ),
            "{full}"
        );
        let denied = work_file_unwritable(at, &std::io::Error::from_raw_os_error(13)).to_string();
        assert!(!denied.contains("another disk"), "{denied}");
    }

    #[test]
    fn a_first_manifest_never_replaces_one_that_appeared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        assert!(write_atomically_new(&path, b"first").unwrap());
        assert!(!write_atomically_new(&path, b"second").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
    }
}
