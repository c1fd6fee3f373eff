//! The output file protocol: frames are written to a hidden temporary file beside the
//! target, `.NAME.rave.tmp`, locked for the whole run (the reservation: a second run on the
//! same target is refused). Only a complete run moves it to the target; a cancelled run's
//! finalized file becomes `NAME.partial.EXT` (or the first free `NAME.partial-N.EXT`); a failed
//! run's is deleted. Nothing is replaced without `--overwrite`, and the input never is.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rave_core::error::{EngineError, Result};

use crate::no_replace::{rename_no_replace, sync_folder_of};
use crate::output_lock::{FileId, Reservation, ReserveError, sweep_stale, temp_name};

pub use crate::output_lock::remove_in_flight;

/// Numbered alternatives tried for a name that is taken (`-2` up to this).
const MAX_NUMBERED: u32 = 999;

/// The paths one run writes, reserved until dropped. Dropped before the output was settled
/// (committed or kept as a partial), the temporary file is removed: a run that fails, at
/// any step, leaves nothing.
#[derive(Debug)]
pub struct OutputTarget {
    target: PathBuf,
    reservation: Reservation,
    input: Option<FileId>,
    overwrite: bool,
    settled: AtomicBool,
    /// Where the finished file went when the target appeared during the run.
    kept_as: std::sync::OnceLock<PathBuf>,
    /// Names this run's partial output must not take (see [`OutputTarget::avoiding`]).
    others: Arc<HashSet<PathBuf>>,
}

/// Where an output goes: its file name and folder, and the input's identity.
struct Place {
    name: String,
    dir: PathBuf,
    input: Option<FileId>,
}

/// The longest file name Linux file systems take, in bytes.
const NAME_MAX_BYTES: usize = 255;

/// The longest output name whose derived names still fit: `.NAME.rave-work` (11 bytes
/// more) and `NAME.partial-999.EXT` (12 more) beside it.
const MAX_OUTPUT_NAME_BYTES: usize = NAME_MAX_BYTES - 12;

/// `target`'s place, refused when it has no file name, its folder does not exist, it is
/// the input (by device and inode: a hard link too) or a folder.
fn place(target: &Path, input: &Path) -> Result<Place> {
    let unusable = |reason: &str| EngineError::OutputNameUnusable {
        path: target.to_path_buf(),
        reason: reason.into(),
    };
    let name = target
        .file_name()
        .ok_or_else(|| unusable("is not a file name"))?
        .to_string_lossy()
        .into_owned();
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        target.file_name().map_or(0, |n| n.as_bytes().len())
    };
    if bytes > MAX_OUTPUT_NAME_BYTES {
        return Err(unusable(&format!(
            "its name is {bytes} bytes; RAVE names files beside it with up to {} bytes more (its temporary file, work folder, a partial output), past the {NAME_MAX_BYTES} a file name may have: shorten it to {MAX_OUTPUT_NAME_BYTES} bytes at most",
            NAME_MAX_BYTES - MAX_OUTPUT_NAME_BYTES
        )));
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(EngineError::OutputUnwritable {
            path: target.to_path_buf(),
            reason: "its folder does not exist".into(),
        });
    }
    let input = FileId::of_path(input);
    if input.is_some() && FileId::of_path(target) == input {
        return Err(unusable("is the input file; choose another output path"));
    }
    if target.is_dir() {
        return Err(unusable(
            "is a directory; move or rename that folder, or choose another output name",
        ));
    }
    Ok(Place { name, dir, input })
}

/// Refuse `target` when something has its name and `overwrite` was not given: a file (or
/// folder) that exists, or a symbolic link to nothing, said as such (a rerun, even with
/// `--skip-existing`, finds it again).
fn refuse_taken(target: &Path, overwrite: bool) -> Result<()> {
    if overwrite || target.symlink_metadata().is_err() {
        return Ok(());
    }
    if target.metadata().is_err() {
        let points_to = std::fs::read_link(target).unwrap_or_default();
        return Err(EngineError::OutputNameUnusable {
            path: target.to_path_buf(),
            reason: format!(
                "a symbolic link to nothing has its name (it points to {}); remove the link, or pass --overwrite to replace it",
                points_to.display()
            ),
        });
    }
    Err(EngineError::OutputExists(target.to_path_buf()))
}

impl OutputTarget {
    /// Check that `target` may be written without reserving it (`rave plan`, before any
    /// work): a file name in a folder that exists, not the input, not a folder, and existing
    /// only with `overwrite`.
    pub fn check(target: &Path, input: &Path, overwrite: bool) -> Result<()> {
        place(target, input)?;
        refuse_taken(target, overwrite)
    }

    /// Check that `target` may be written (not the input, exists only with `overwrite`,
    /// folder present), remove temporary files of dead runs from its folder, and reserve
    /// the temporary path (refused while another run holds it).
    pub fn prepare(target: &Path, input: &Path, overwrite: bool) -> Result<Self> {
        let Place { name, dir, input } = place(target, input)?;
        let is_input = |p: &Path| input.is_some() && FileId::of_path(p) == input;
        for stale in sweep_stale(&dir, input) {
            tracing::debug!(path = %stale.display(), "removed the temporary file of a run that is no longer alive");
        }
        let temp = dir.join(temp_name(&name));
        if is_input(&temp) {
            return Err(EngineError::OutputNameUnusable {
                path: target.to_path_buf(),
                reason: "its temporary file name is the input's; rename the input".into(),
            });
        }
        let reservation = Reservation::take(&temp).map_err(|e| match e {
            ReserveError::Busy => EngineError::OutputInUse(target.to_path_buf()),
            ReserveError::Io(e) => EngineError::OutputUnwritable {
                path: target.to_path_buf(),
                // The hidden temporary file is RAVE's business: name the folder.
                reason: format!("cannot create a file in {}: {e}", dir.display()),
            },
        })?;
        // Only now, holding the reservation: a run that finished just before sees its
        // result here.
        if let Err(taken) = refuse_taken(target, overwrite) {
            reservation.remove();
            return Err(taken);
        }
        Ok(Self {
            target: target.to_path_buf(),
            reservation,
            input,
            overwrite,
            settled: AtomicBool::new(false),
            kept_as: std::sync::OnceLock::new(),
            others: Default::default(),
        })
    }

    /// Where frames are written while the run is in progress.
    pub fn temp_path(&self) -> &Path {
        self.reservation.path()
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// This target's partial output (and a finished file kept beside it) does not take any
    /// of `outputs`: a batch's (its own output is never such a name).
    pub fn avoiding(mut self, outputs: Arc<HashSet<PathBuf>>) -> Self {
        self.others = outputs;
        self
    }

    /// Where a cancelled run's finalized output goes first: `NAME.partial.EXT`.
    pub fn partial_path(&self) -> PathBuf {
        numbered(&self.target, ".partial", 1)
    }

    fn is_input(&self, p: &Path) -> bool {
        self.input.is_some() && FileId::of_path(p) == self.input
    }

    /// The run completed: move the finished file into place. Without `--overwrite` a
    /// target that appeared meanwhile is not replaced: the error names where the finished
    /// file was kept instead (`NAME-2.EXT`, ...).
    pub fn commit(&self) -> Result<PathBuf> {
        let failed = |e: io::Error| EngineError::OutputUnwritable {
            path: self.target.clone(),
            reason: format!("cannot move the finished file into place: {e}"),
        };
        // On disk before it takes the final name: a power cut just after a run said
        // "complete" (and removed its work folder) must not leave a short file under it. A
        // file system that cannot sync at all (some FUSE and network ones refuse) is only
        // logged; one that fails to write the data is an error.
        match File::open(self.temp_path()).and_then(|f| f.sync_all()) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                tracing::warn!(path = %self.target.display(), "cannot sync the finished file: {e}");
            }
            Err(e) => {
                return Err(EngineError::OutputUnwritable {
                    path: self.target.clone(),
                    reason: format!("cannot write the finished file to disk: {e}"),
                });
            }
            Ok(()) => {}
        }
        if self.overwrite {
            if self.is_input(&self.target) {
                return Err(EngineError::OutputUnwritable {
                    path: self.target.clone(),
                    reason: "became the input file during the run; not replaced".into(),
                });
            }
            std::fs::rename(self.temp_path(), &self.target).map_err(failed)?;
            self.settled.store(true, Ordering::SeqCst);
            sync_folder_of(&self.target);
            return Ok(self.target.clone());
        }
        match rename_no_replace(self.temp_path(), &self.target) {
            Ok(()) => {
                self.settled.store(true, Ordering::SeqCst);
                sync_folder_of(&self.target);
                Ok(self.target.clone())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let kept = self.place_numbered("", 2)?;
                let _ = self.kept_as.set(kept.clone());
                Err(EngineError::OutputUnwritable {
                    path: self.target.clone(),
                    reason: format!(
                        "it already exists (it appeared during the run) and is not replaced without --overwrite; the finished file was kept as {}",
                        kept.display()
                    ),
                })
            }
            Err(e) => Err(failed(e)),
        }
    }

    /// Where the finished file was kept when the target appeared during the run (see
    /// [`OutputTarget::commit`]).
    pub fn kept_elsewhere(&self) -> Option<&Path> {
        self.kept_as.get().map(PathBuf::as_path)
    }

    /// The run was cancelled after finalizing what it had: keep it as `NAME.partial.EXT`,
    /// or, where that name is taken (and not replaceable: no `--overwrite`, or it is the
    /// input), as the first free `NAME.partial-N.EXT`.
    pub fn keep_partial(&self) -> Result<PathBuf> {
        let first = self.partial_path();
        if self.overwrite
            && !self.is_input(&first)
            && !self.others.contains(&first)
            && !first.is_dir()
            && std::fs::rename(self.temp_path(), &first).is_ok()
        {
            self.settled.store(true, Ordering::SeqCst);
            return Ok(first);
        }
        self.place_numbered(".partial", 1)
    }

    /// Whether `partial`, a file an earlier interrupted run of this job kept beside the
    /// target, is still there (a file, not the input): once this run has committed, it
    /// holds frames the target holds too.
    pub fn is_leftover(&self, partial: &Path) -> bool {
        partial.is_file() && !self.is_input(partial)
    }

    /// Move the temporary file to the first free `STEM{tag}[-N].EXT` from `from` on.
    fn place_numbered(&self, tag: &str, from: u32) -> Result<PathBuf> {
        for n in from..=MAX_NUMBERED {
            let path = numbered(&self.target, tag, n);
            if self.others.contains(&path) {
                continue;
            }
            match rename_no_replace(self.temp_path(), &path) {
                Ok(()) => {
                    self.settled.store(true, Ordering::SeqCst);
                    return Ok(path);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(EngineError::OutputUnwritable {
                        path,
                        reason: e.to_string(),
                    });
                }
            }
        }
        Err(EngineError::OutputUnwritable {
            path: numbered(&self.target, tag, MAX_NUMBERED),
            reason: format!("every name up to -{MAX_NUMBERED} is taken"),
        })
    }

    /// The run failed: remove whatever was written.
    pub fn discard(&self) {
        self.reservation.remove();
    }
}

impl Drop for OutputTarget {
    fn drop(&mut self) {
        if !self.settled.load(Ordering::SeqCst) {
            self.reservation.remove();
        }
    }
}

/// `STEM{tag}.EXT` for `n` = 1, `STEM{tag}-N.EXT` after.
fn numbered(target: &Path, tag: &str, n: u32) -> PathBuf {
    let stem = target
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let count = match n {
        1 => String::new(),
        n => format!("-{n}"),
    };
    let name = match target.extension() {
        Some(ext) => format!("{stem}{tag}{count}.{}", ext.to_string_lossy()),
        None => format!("{stem}{tag}{count}"),
    };
    target.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.mp4");
        std::fs::write(&input, b"input bytes").unwrap();
        (dir, input)
    }

    #[test]
    fn an_output_name_too_long_for_the_names_beside_it_is_refused_before_work() {
        let dir = tempfile::tempdir().unwrap();
        let fits = dir
            .path()
            .join(format!("{}.mkv", "n".repeat(MAX_OUTPUT_NAME_BYTES - 4)));
        OutputTarget::check(&fits, Path::new("/in.mp4"), false).unwrap();
        let long = dir
            .path()
            .join(format!("{}.mkv", "n".repeat(MAX_OUTPUT_NAME_BYTES - 3)));
        let err = OutputTarget::check(&long, Path::new("/in.mp4"), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("its name is 244 bytes") && err.contains("shorten it to 243 bytes"),
            "{err}"
        );
    }

    #[test]
    fn refuses_existing_without_overwrite_and_the_input_itself() {
        let (dir, input) = setup();
        let dir = dir.path();
        let out = dir.join("out.mp4");
        drop(OutputTarget::prepare(&out, &input, false).unwrap());
        std::fs::write(&out, b"x").unwrap();
        let err = OutputTarget::prepare(&out, &input, false).unwrap_err();
        assert_eq!(err.kind(), "output_exists");
        assert!(
            !dir.join(".out.mp4.rave.tmp").exists(),
            "refusal leaves no temp"
        );
        drop(OutputTarget::prepare(&out, &input, true).unwrap());
        let err = OutputTarget::prepare(&input, &input, true).unwrap_err();
        assert!(err.to_string().contains("is the input file"), "{err}");
        let link = dir.join("hard-link.mp4");
        std::fs::hard_link(&input, &link).unwrap();
        let err = OutputTarget::prepare(&link, &input, true).unwrap_err();
        assert!(err.to_string().contains("is the input file"), "{err}");
        let err = OutputTarget::prepare(&dir.join("nope/out.mp4"), &input, false).unwrap_err();
        assert!(err.to_string().contains("folder does not exist"), "{err}");
        let t = OutputTarget::prepare(&dir.join("clip.mkv"), &input, false).unwrap();
        assert_eq!(t.partial_path(), dir.join("clip.partial.mkv"));
        std::fs::write(t.temp_path(), b"data").unwrap();
        assert_eq!(t.commit().unwrap(), dir.join("clip.mkv"));
        assert!(!t.temp_path().exists());
    }

    #[test]
    fn a_second_reservation_of_one_target_is_refused_while_the_first_holds() {
        let (dir, input) = setup();
        let out = dir.path().join("out.mp4");
        let first = OutputTarget::prepare(&out, &input, false).unwrap();
        for overwrite in [false, true] {
            let err = OutputTarget::prepare(&out, &input, overwrite).unwrap_err();
            assert_eq!(err.kind(), "output_in_use");
            assert_eq!(err.family().exit_code(), 4);
        }
        std::fs::write(first.temp_path(), b"done").unwrap();
        first.commit().unwrap();
        drop(first);
        let err = OutputTarget::prepare(&out, &input, false).unwrap_err();
        assert_eq!(err.kind(), "output_exists");
    }

    #[test]
    fn a_target_that_appears_during_the_run_is_not_replaced() {
        let (dir, input) = setup();
        let out = dir.path().join("out.mp4");
        let t = OutputTarget::prepare(&out, &input, false).unwrap();
        std::fs::write(t.temp_path(), b"finished").unwrap();
        std::fs::write(&out, b"someone else's").unwrap();
        let err = t.commit().unwrap_err().to_string();
        assert!(
            err.contains("already exists") && err.contains("out-2.mp4"),
            "{err}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"someone else's");
        assert_eq!(
            std::fs::read(dir.path().join("out-2.mp4")).unwrap(),
            b"finished"
        );
    }

    #[test]
    fn a_partial_does_not_take_the_name_of_another_inputs_output() {
        let (dir, input) = setup();
        let d = dir.path();
        // A batch of clip.mkv and the user's clip.partial.mkv: the latter's output is
        // out/clip.partial.mkv, which clip.mkv's partial must leave alone, with --overwrite
        // too, whether that output exists yet or not.
        let others = [d.join("clip.partial.mkv"), d.join("clip.partial-2.mkv")];
        let batch: Arc<HashSet<PathBuf>> = Arc::new(others.iter().cloned().collect());
        for (overwrite, want) in [(false, "clip.partial-3.mkv"), (true, "clip.partial-4.mkv")] {
            let t = OutputTarget::prepare(&d.join("clip.mkv"), &input, overwrite)
                .unwrap()
                .avoiding(batch.clone());
            std::fs::write(t.temp_path(), b"partial").unwrap();
            assert_eq!(t.keep_partial().unwrap(), d.join(want));
        }
        assert!(!others[0].exists() && !others[1].exists());
    }

    #[test]
    fn a_partial_never_replaces_the_input_or_without_overwrite_an_existing_partial() {
        let (dir, _) = setup();
        let d = dir.path();
        // The input is clip.partial.mp4 and the output clip.mp4.
        let input = d.join("clip.partial.mp4");
        std::fs::write(&input, b"the input").unwrap();
        for overwrite in [false, true] {
            let t = OutputTarget::prepare(&d.join("clip.mp4"), &input, overwrite).unwrap();
            std::fs::write(t.temp_path(), b"partial").unwrap();
            let kept = t.keep_partial().unwrap();
            assert_eq!(std::fs::read(&input).unwrap(), b"the input");
            assert_eq!(std::fs::read(&kept).unwrap(), b"partial");
            assert_ne!(kept, input);
        }
        assert!(d.join("clip.partial-2.mp4").exists() && d.join("clip.partial-3.mp4").exists());

        // Another input; an existing partial is kept without --overwrite, replaced with it.
        let other = d.join("other.mp4");
        std::fs::write(&other, b"x").unwrap();
        let t = OutputTarget::prepare(&d.join("clip.mp4"), &other, false).unwrap();
        std::fs::write(t.temp_path(), b"fourth").unwrap();
        assert_eq!(t.keep_partial().unwrap(), d.join("clip.partial-4.mp4"));
        let t = OutputTarget::prepare(&d.join("clip.mp4"), &other, true).unwrap();
        std::fs::write(t.temp_path(), b"replaced").unwrap();
        assert_eq!(t.keep_partial().unwrap(), input);
        assert_eq!(std::fs::read(&input).unwrap(), b"replaced");
    }

    #[test]
    fn a_leftover_partial_is_a_file_still_there_and_not_the_input() {
        let (dir, _) = setup();
        let d = dir.path();
        let input = d.join("clip.partial-3.mp4");
        for name in ["clip.partial.mp4", "clip.partial-3.mp4"] {
            std::fs::write(d.join(name), b"x").unwrap();
        }
        std::fs::create_dir(d.join("clip.partial-4.mp4")).unwrap();
        let t = OutputTarget::prepare(&d.join("clip.mp4"), &input, false).unwrap();
        assert!(t.is_leftover(&d.join("clip.partial.mp4")));
        assert!(!t.is_leftover(&input), "the input");
        assert!(!t.is_leftover(&d.join("clip.partial-4.mp4")), "a folder");
        assert!(!t.is_leftover(&d.join("clip.partial-2.mp4")), "gone");
    }

    #[test]
    fn a_link_at_the_temporary_name_is_never_written_through() {
        let (dir, input) = setup();
        let d = dir.path();
        let victim = d.join("victim.txt");
        std::fs::write(&victim, b"precious").unwrap();
        let elsewhere = d.join("created-elsewhere");
        for (name, points_to) in [("out.mp4", &victim), ("dangling.mp4", &elsewhere)] {
            let temp = d.join(format!(".{name}.rave.tmp"));
            std::os::unix::fs::symlink(points_to, &temp).unwrap();
            let t = OutputTarget::prepare(&d.join(name), &input, false).unwrap();
            std::fs::write(t.temp_path(), b"the upscaled file").unwrap();
            assert!(!t.temp_path().symlink_metadata().unwrap().is_symlink());
            assert_eq!(t.commit().unwrap(), d.join(name));
            assert!(!d.join(name).symlink_metadata().unwrap().is_symlink());
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!elsewhere.exists());
    }

    #[test]
    fn preparing_sweeps_dead_runs_temp_files_but_not_live_ones() {
        let (dir, input) = setup();
        let d = dir.path();
        let dead = d.join(".gone.mp4.rave.tmp");
        std::fs::write(&dead, b"killed run").unwrap();
        let live = OutputTarget::prepare(&d.join("live.mp4"), &input, false).unwrap();
        assert!(!dead.exists());
        let t = OutputTarget::prepare(&d.join("third.mp4"), &input, false).unwrap();
        assert!(live.temp_path().exists());
        t.discard();
        assert!(!t.temp_path().exists());
    }

    #[test]
    fn an_unsettled_target_leaves_nothing_when_dropped() {
        let (dir, input) = setup();
        let t = OutputTarget::prepare(&dir.path().join("out.mp4"), &input, false).unwrap();
        std::fs::write(t.temp_path(), b"half a run").unwrap();
        let temp = t.temp_path().to_path_buf();
        drop(t);
        assert!(!temp.exists());
        let t = OutputTarget::prepare(&dir.path().join("out.mp4"), &input, false).unwrap();
        std::fs::write(t.temp_path(), b"done").unwrap();
        let kept = t.commit().unwrap();
        drop(t);
        assert_eq!(std::fs::read(kept).unwrap(), b"done");
    }

    #[test]
    fn numbered_names_keep_the_extension() {
        let t = Path::new("/x/clip.mp4");
        assert_eq!(numbered(t, ".partial", 1), Path::new("/x/clip.partial.mp4"));
        assert_eq!(
            numbered(t, ".partial", 3),
            Path::new("/x/clip.partial-3.mp4")
        );
        assert_eq!(numbered(t, "", 2), Path::new("/x/clip-2.mp4"));
        assert_eq!(
            numbered(Path::new("noext"), ".partial", 2),
            Path::new("noext.partial-2")
        );
    }
}
