//! Reserving an output: the hidden temporary file beside the target is opened and held under
//! an exclusive lock for the whole run, so a second run on the same target finds it taken, and
//! a temporary file whose lock is free belongs to a dead run (swept). Reserved paths are listed
//! so an abort (a second Ctrl+C) can remove them before the process exits; from then on no new
//! one can be created.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// A file's identity: device and inode, so hard links and renamed paths compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `path` refers to (following symlinks), if it exists.
    pub fn of_path(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(&m))
    }

    /// The identity in `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    fn of_file(file: &File) -> io::Result<Self> {
        file.metadata().map(|m| Self::of(&m))
    }
}

/// Why a path could not be reserved.
#[derive(Debug)]
pub enum ReserveError {
    /// Another live process holds the lock.
    Busy,
    /// Opening or locking failed.
    Io(io::Error),
}

/// Temporary files reserved by this process (path and identity), for [`remove_in_flight`].
/// A file is created and listed under this lock, so an abort sees every file there is.
static IN_FLIGHT: Mutex<Vec<(PathBuf, FileId)>> = Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<(PathBuf, FileId)>> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove every temporary file this process still has reserved, when it is about to exit
/// without settling its output. The list stays locked afterwards, so no other thread (they run
/// on until the process is gone) can create another: call this only right before exiting. A
/// path is removed only while it is still the reserved file.
pub fn remove_in_flight() {
    std::mem::forget(remove_in_flight_under(None));
}

/// Remove the reserved paths under `dir` (all with `None`); the list's lock is returned.
fn remove_in_flight_under(
    dir: Option<&Path>,
) -> std::sync::MutexGuard<'static, Vec<(PathBuf, FileId)>> {
    let mut list = in_flight();
    list.retain(|(path, id)| {
        if dir.is_some_and(|d| !path.starts_with(d)) {
            return true;
        }
        if FileId::of_path(path) == Some(*id) {
            let _ = std::fs::remove_file(path);
        }
        false
    });
    list
}

/// A reserved temporary file: locked until dropped.
#[derive(Debug)]
pub struct Reservation {
    path: PathBuf,
    id: FileId,
    // Holds the lock; closing it releases it.
    _file: File,
}

/// How long a lock held by someone else is retried before the path counts as busy (a sweep
/// of a dead run's file holds it for an instant only).
const BUSY_RETRIES: u32 = 10;
const BUSY_WAIT: Duration = Duration::from_millis(20);
/// Attempts in all, counting paths that were replaced between opening and locking.
const MAX_ATTEMPTS: u32 = 100;

impl Reservation {
    /// Open (creating it if needed, never truncating) and lock `path`; checks after locking
    /// that `path` still names the locked file (a sweep may have removed it meanwhile).
    pub fn take(path: &Path) -> Result<Self, ReserveError> {
        let mut busy = 0;
        for _ in 0..MAX_ATTEMPTS {
            let mut list = in_flight();
            // A link at the temporary name is not RAVE's file: writing through it would
            // overwrite (or create) a file anywhere (a link planted in a shared folder such
            // as /tmp). The link itself goes; the file is opened without following links.
            if path
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                std::fs::remove_file(path).map_err(ReserveError::Io)?;
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(ReserveError::Io)?;
            let id = FileId::of_file(&file).map_err(ReserveError::Io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    drop(list);
                    busy += 1;
                    if busy > BUSY_RETRIES {
                        return Err(ReserveError::Busy);
                    }
                    std::thread::sleep(BUSY_WAIT);
                    continue;
                }
                Err(TryLockError::Error(e)) => return Err(ReserveError::Io(e)),
            }
            if FileId::of_path(path) != Some(id) {
                continue;
            }
            list.push((path.to_path_buf(), id));
            return Ok(Self {
                path: path.to_path_buf(),
                id,
                _file: file,
            });
        }
        Err(ReserveError::Busy)
    }

    /// The reserved path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the file at the reserved path if it is still the reserved file.
    pub fn remove(&self) {
        if FileId::of_path(&self.path) == Some(self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        in_flight().retain(|(p, id)| !(p == &self.path && *id == self.id));
    }
}

/// The temporary file name RAVE writes `target_name` through.
pub fn temp_name(target_name: &str) -> String {
    format!(".{target_name}.rave.tmp")
}

/// Whether `name` is one of RAVE's temporary files: `.NAME.rave.tmp`, or an older
/// `.NAME.rave-PID.tmp`, NAME being an output RAVE writes (`.mp4`, `.m4v`, `.mov`, `.mkv`);
/// returns the PID of the older form.
fn temp_file_kind(name: &str) -> Option<Option<u32>> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (stem, pid) = match rest.strip_suffix(".rave") {
        Some(stem) => (stem, None),
        None => {
            let (stem, pid) = rest.rsplit_once(".rave-")?;
            (stem, Some(pid.parse::<u32>().ok()?))
        }
    };
    rave_ffmpeg::Container::of_extension(Path::new(stem)).map(|_| pid)
}

/// The files the runs of this process read (a batch's inputs): never swept, whatever their
/// names (see [`protect_inputs`]).
static INPUTS: Mutex<Vec<FileId>> = Mutex::new(Vec::new());

/// Never remove `paths` (the inputs of a batch) as temporary files of dead runs: one named
/// like RAVE's temporary file would be swept by another input's run.
pub fn protect_inputs(paths: &[&Path]) {
    let mut inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    inputs.extend(paths.iter().filter_map(|p| FileId::of_path(p)));
}

/// Remove RAVE temporary files in `dir` left by runs that are no longer alive (their lock
/// is free), never touching the file `spare` (the input). Returns what was removed.
pub fn sweep_stale(dir: &Path, spare: Option<FileId>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(kind) = name.to_str().and_then(temp_file_kind) else {
            continue;
        };
        if kind.is_some_and(process_alive) {
            // An older RAVE did not lock its temporary files; its PID says whether it runs.
            continue;
        }
        let path = entry.path();
        if remove_if_unlocked(&path, spare) {
            removed.push(path);
        }
    }
    removed
}

fn remove_if_unlocked(path: &Path, spare: Option<FileId>) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        return false;
    };
    let id = FileId::of(&meta);
    let protected = INPUTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&id);
    if !meta.file_type().is_file() || Some(id) == spare || protected {
        return false;
    }
    // Non-blocking, in case the path became a FIFO since it was looked at.
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if FileId::of_file(&file).ok() != Some(id) || file.try_lock().is_err() {
        return false;
    }
    // Locked by us now: a live run cannot take it until it is gone, and one that opened it
    // meanwhile re-checks the path after locking.
    FileId::of_path(path) == Some(id) && std::fs::remove_file(path).is_ok()
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserved_path_is_busy_for_a_second_taker_and_free_after_drop() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".out.mp4.rave.tmp");
        let first = Reservation::take(&p).unwrap();
        assert!(matches!(Reservation::take(&p), Err(ReserveError::Busy)));
        drop(first);
        let again = Reservation::take(&p).unwrap();
        assert_eq!(again.path(), p);
    }

    #[test]
    fn the_sweep_removes_unlocked_temp_files_only() {
        let d = tempfile::tempdir().unwrap();
        let live = d.path().join(".live.mp4.rave.tmp");
        let held = Reservation::take(&live).unwrap();
        let dead = d.path().join(".dead.mkv.rave.tmp");
        std::fs::write(&dead, b"left by a killed run").unwrap();
        let legacy_dead = d.path().join(".old.mp4.rave-4294967295.tmp");
        std::fs::write(&legacy_dead, b"x").unwrap();
        let legacy_live = d
            .path()
            .join(format!(".old.mp4.rave-{}.tmp", std::process::id()));
        std::fs::write(&legacy_live, b"x").unwrap();
        let input = d.path().join(".in.mp4.rave.tmp");
        std::fs::write(&input, b"the user's input").unwrap();
        // Not names RAVE gives (no output extension: a user's `.notes.rave.tmp` was swept).
        let user_files = [
            ".rave.tmp",
            "x.rave.tmp",
            ".notes.tmp",
            ".a.raven.tmp",
            ".notes.rave.tmp",
            ".clip.avi.rave.tmp",
        ]
        .map(|n| d.path().join(n));
        for f in &user_files {
            std::fs::write(f, b"keep").unwrap();
        }
        let mut removed = sweep_stale(d.path(), FileId::of_path(&input));
        removed.sort();
        let mut expected = vec![dead.clone(), legacy_dead.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(live.exists() && legacy_live.exists() && input.exists());
        assert!(user_files.iter().all(|f| f.exists()));
        // Another input of the batch named like a dead run's file is not swept either.
        let other_input = d.path().join(".w.mp4.rave.tmp");
        std::fs::write(&other_input, b"another input of the batch").unwrap();
        protect_inputs(&[other_input.as_path()]);
        assert_eq!(
            sweep_stale(d.path(), FileId::of_path(&input)),
            Vec::<PathBuf>::new()
        );
        assert!(other_input.exists());
        drop(held);
        assert_eq!(sweep_stale(d.path(), FileId::of_path(&input)), vec![live]);
        assert!(input.exists());
    }

    #[test]
    fn remove_in_flight_clears_only_files_still_reserved() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join(".a.mp4.rave.tmp");
        let b = d.path().join(".b.mp4.rave.tmp");
        let ra = Reservation::take(&a).unwrap();
        let rb = Reservation::take(&b).unwrap();
        // `b` was moved into place and its name reused by something else.
        std::fs::rename(&b, d.path().join("b.mp4")).unwrap();
        std::fs::write(&b, b"not ours").unwrap();
        drop(remove_in_flight_under(Some(d.path())));
        assert!(!a.exists());
        assert_eq!(std::fs::read(&b).unwrap(), b"not ours");
        drop((ra, rb));
    }
}
