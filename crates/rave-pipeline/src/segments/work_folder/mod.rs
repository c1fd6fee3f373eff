//! The work folder of a job: `manifest.json`, its lock, and one video-only file per finished
//! segment (`seg-NNNNN.mp4`). A segment's file is written under a name of its own worker,
//! synced, and renamed into place under the lock only if no other worker finished it first:
//! two workers on the same segment leave one good file.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

use super::manifest::Manifest;
use super::paths::{absolute, same_path};
use super::work_files::{self, WorkFile};

/// Name of the manifest in a work folder.
pub const MANIFEST: &str = "manifest.json";
const LOCK: &str = "manifest.lock";
/// Held (shared) by every process working on the job, for as long as it does; `--restart`
/// needs it exclusively, so it cannot discard a job that is being worked on.
const JOB_LOCK: &str = "job.lock";

/// A process's claim on a job (released when dropped).
#[derive(Debug)]
pub struct JobClaim {
    file: std::fs::File,
}

impl JobClaim {
    /// Make the claim exclusive (to remove the folder): refused while another process
    /// holds a claim on the job, and the shared claim is taken again (a failed conversion
    /// of a `flock` drops the lock held).
    fn make_exclusive(&self, folder: &WorkFolder) -> Result<()> {
        match self.file.try_lock() {
            Ok(()) => Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                let _ = self.file.try_lock_shared();
                Err(EngineError::WorkFolderMismatch {
                    work: folder.dir.clone(),
                    reason: "another RAVE process is working on this job; the folder is left to it"
                        .into(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(folder.error(format!("cannot lock it: {e}")))
            }
        }
    }
}

/// A job's work folder.
#[derive(Debug, Clone)]
pub struct WorkFolder {
    dir: PathBuf,
}

/// The manifest, held under the work folder's lock until dropped.
pub struct LockedManifest<'a> {
    folder: &'a WorkFolder,
    _lock: File,
    /// The manifest as read under the lock.
    pub manifest: Manifest,
}

impl LockedManifest<'_> {
    /// Write the changed manifest back (still under the lock).
    pub fn save(&self) -> Result<()> {
        self.manifest.write(&self.folder.manifest_path())
    }
}

impl WorkFolder {
    /// The work folder at `dir` (not created).
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// The default work folder of `output`: `.NAME.rave-work` beside it.
    pub fn beside(output: &Path) -> Self {
        let name = output
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let dir = output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Self::at(&dir.join(format!(".{name}.rave-work")))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Path of the manifest.
    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST)
    }

    /// Whether a manifest exists (a job was planned here).
    pub fn has_manifest(&self) -> bool {
        self.manifest_path().is_file()
    }

    /// Create the folder (and its parents).
    pub fn create(&self) -> Result<()> {
        // Something that is not a folder has its name (a file, a link to nothing): every run
        // would fail the same way until it is moved.
        if let Ok(meta) = std::fs::symlink_metadata(&self.dir)
            && !self.dir.is_dir()
        {
            let what = match (meta.file_type().is_symlink(), self.dir.exists()) {
                (true, false) => "a symbolic link to nothing",
                (true, true) => "a symbolic link to a file",
                (false, _) => "a file",
            };
            return Err(EngineError::OutputNameUnusable {
                path: self.dir.clone(),
                reason: format!("work folder: {what} is where it goes; move or remove it"),
            });
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| self.error(format!("cannot create it: {e}")))
    }

    /// Read the manifest without the lock (for status).
    pub fn read(&self) -> Result<Manifest> {
        Manifest::read(&self.manifest_path(), &self.dir)
    }

    /// Take the manifest's lock (held until the file is dropped).
    fn manifest_lock(&self) -> Result<File> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK))
            .map_err(|e| self.error(format!("cannot open its lock file: {e}")))?;
        lock.lock()
            .map_err(|e| self.error(format!("cannot lock it: {e}")))?;
        Ok(lock)
    }

    /// Write `manifest` as the folder's first, under the lock; `false` (nothing written)
    /// where another process planned a job here first (two runs given the same `--work`
    /// folder plan at the same time: the second must resume or refuse that job, not write
    /// over it).
    pub fn write_first(&self, manifest: &Manifest) -> Result<bool> {
        let _lock = self.manifest_lock()?;
        if self.has_manifest() {
            return Ok(false);
        }
        // Taken without replacing: on shared storage another host's lock may not exclude
        // this one, or its new manifest may not show yet.
        manifest.write_new(&self.manifest_path())
    }

    /// Take the lock and read the manifest.
    pub fn lock(&self) -> Result<LockedManifest<'_>> {
        let lock = self.manifest_lock()?;
        let manifest = self.read()?;
        Ok(LockedManifest {
            folder: self,
            _lock: lock,
            manifest,
        })
    }

    /// Claim the job for as long as the returned value lives: shared (`exclusive` false:
    /// every upscale or segment worker) or exclusive (to discard it), failing at once with a
    /// clear error when another process holds a claim that conflicts.
    pub fn claim(&self, exclusive: bool) -> Result<JobClaim> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(JOB_LOCK))
            .map_err(|e| self.error(format!("cannot open its job lock: {e}")))?;
        let taken = match exclusive {
            true => file.try_lock(),
            false => file.try_lock_shared(),
        };
        match taken {
            Ok(()) => Ok(JobClaim { file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(EngineError::WorkFolderMismatch {
                work: self.dir.clone(),
                reason: match exclusive {
                    true => "another RAVE process is working on this job (`rave upscale` or `rave segment`); wait for it to end or stop it before --restart".into(),
                    false => "the job is being discarded by another RAVE process (a --restart, or the run that finished its output removing its work folder); run again once it has ended".into(),
                },
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(self.error(format!("cannot lock it: {e}"))),
        }
    }

    /// Whether the folder's manifest.json was written by RAVE (a folder of someone else's
    /// with a file of that name is not to be discarded). A manifest damaged past reading
    /// (a power cut, a full disk) is RAVE's where segment files of RAVE's are beside it
    /// (other files, a scheduler's logs, may be there too: they stay).
    pub fn holds_rave_manifest(&self) -> bool {
        let parsed = std::fs::read_to_string(self.manifest_path())
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        match parsed {
            Some(v) => v
                .get("planned_by")
                .and_then(|b| b.as_str())
                .is_some_and(|b| b.starts_with("rave ")),
            None => self.holds_raves_segments(),
        }
    }

    /// The names of the files in the folder (none where it cannot be read).
    fn file_names(&self) -> Vec<String> {
        std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the folder holds a segment file of RAVE's (finished, partial or being
    /// written), by its exact name.
    fn holds_raves_segments(&self) -> bool {
        self.file_names().iter().any(|name| {
            matches!(
                work_files::classify(name),
                Some(WorkFile::Segment | WorkFile::Partial | WorkFile::Temp { .. })
            )
        })
    }

    /// Refuse this folder, which holds no job of RAVE's (no manifest), for a new job of
    /// `input` into `output`: where it holds files under the names RAVE gives its segments
    /// (a job would write over them and remove them when it ends: a user's own file, the
    /// input itself, or what a job left whose manifest is gone), or where the output would
    /// take such a name in it.
    pub fn check_unclaimed(&self, output: &Path) -> Result<()> {
        let refuse = |reason: String| {
            Err(EngineError::WorkFolderMismatch {
                work: self.dir.clone(),
                reason,
            })
        };
        if self.has_manifest() {
            // Another run planned its job here meanwhile: resumed or refused as a job.
            return Ok(());
        }
        let taken: Vec<String> = self
            .file_names()
            .into_iter()
            .filter(|name| is_segment_file(name))
            .collect();
        if let Some(first) = taken.iter().min() {
            return refuse(format!(
                "holds {} file(s) named as RAVE names its segments ({first}{}) but no job of RAVE's (no manifest.json): a job here would write over them and remove them when it ends; give --work an empty or new folder, or move them out (remove them if they are what an old job left)",
                taken.len(),
                if taken.len() > 1 { ", ..." } else { "" }
            ));
        }
        if self.names_as_work_file(output) {
            return refuse(format!(
                "the output {} would be one of RAVE's work files there (removed when the job ends); name the output otherwise or give --work another folder",
                output.display()
            ));
        }
        Ok(())
    }

    /// Refuse this folder where the input `input` is one of its files under a name RAVE
    /// gives its own work files (`seg-00000.mp4`, say): a job here, planned, resumed or
    /// restarted, would write over it or remove it, and the input is never touched.
    pub fn check_input_outside(&self, input: &Path) -> Result<()> {
        // The file as named (a link there would be removed, the input gone from its path)
        // and the file it resolves to.
        let resolved = input.canonicalize().ok();
        let named_there = self.names_as_work_file(input);
        if named_there
            || resolved
                .as_deref()
                .is_some_and(|file| self.names_as_work_file(file))
        {
            let shown = match (named_there, resolved.as_deref()) {
                (false, Some(file)) => file,
                _ => input,
            };
            return Err(EngineError::WorkFolderMismatch {
                work: self.dir.clone(),
                reason: format!(
                    "the input {} is in it under the name of one of RAVE's work files, which a job there writes over and removes; rename or move the input, or give --work another folder",
                    shown.display()
                ),
            });
        }
        Ok(())
    }

    /// Refuse this folder where it is the output's own path (`--work` naming the output
    /// file, however spelled): the job would make a folder where its finished file goes.
    pub fn check_not_the_output(&self, output: &Path) -> Result<()> {
        // Neither need exist yet: compared by folder and name where not.
        if same_path(&absolute(&self.dir), &absolute(output)) {
            return Err(EngineError::WorkFolderMismatch {
                work: self.dir.clone(),
                reason: format!(
                    "--work names the output {} itself: the job's folder would take the name its finished file needs; give --work another folder (or leave it out: .NAME.rave-work beside the output)",
                    output.display()
                ),
            });
        }
        Ok(())
    }

    /// Whether `path` is in this folder under a name RAVE gives its work files. Names are
    /// compared in lower case: on a file system that ignores case, RAVE's seg-00000.mp4 is
    /// the user's SEG-00000.MP4.
    fn names_as_work_file(&self, path: &Path) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase());
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        name.is_some_and(|n| work_files::classify(&n).is_some())
            && match (
                parent.unwrap_or(Path::new(".")).canonicalize(),
                self.dir.canonicalize(),
            ) {
                (Ok(parent), Ok(dir)) => parent == dir,
                _ => false,
            }
    }

    /// Remove the segment files of a job whose manifest is gone from this folder, RAVE's
    /// own default one beside the output (nobody else puts files there): what a run killed
    /// while removing the folder left, before the manifest went last.
    pub fn discard_orphan_segments(&self) {
        if !self.has_manifest() {
            self.remove_dead_files(true);
        }
    }

    /// The final name of segment `index`'s file.
    pub fn segment_name(index: usize) -> String {
        format!("seg-{index:05}.mp4")
    }

    /// The file a worker writes segment `index` into before it is renamed into place.
    pub fn segment_temp(&self, index: usize) -> PathBuf {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.dir.join(work_files::temp_name(index, n))
    }

    /// The file an interrupted run keeps segment `index`'s frames done in (for its partial
    /// output; redone on resume).
    pub fn segment_partial(&self, index: usize) -> PathBuf {
        self.dir.join(format!("seg-{index:05}.partial.mp4"))
    }

    /// Path of a file in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Remove what interrupted workers left (temporary and partial segment files), except
    /// files of workers still running (their names carry a live process id on this host).
    pub fn sweep_leftovers(&self) {
        self.remove_dead_files(false);
    }

    /// Remove the temporary files of workers that cannot be running, the partial segment
    /// files, and with `finished` the finished segment files too.
    fn remove_dead_files(&self, finished: bool) {
        for name in self.file_names() {
            let dead = match work_files::classify(&name) {
                Some(WorkFile::Temp { host, pid }) => {
                    !work_files::temp_owner_may_run(host.as_deref(), pid)
                }
                Some(WorkFile::Partial) => true,
                Some(WorkFile::Segment) => finished,
                _ => false,
            };
            if dead {
                let _ = std::fs::remove_file(self.dir.join(&name));
            }
        }
    }

    /// Remove what RAVE keeps in the folder (manifest, lock, segment files), then the folder
    /// itself when nothing else is in it (a scheduler's logs written there are kept). Only
    /// under an exclusive claim: `held`, this process's claim, is made exclusive (without
    /// one, one is taken); while another process works on the job the folder is left to it
    /// (an error).
    pub fn remove(&self, held: Option<&JobClaim>) -> Result<()> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.error(format!("cannot read it: {e}"))),
        };
        let taken;
        let claim = match held {
            Some(claim) => claim,
            None => {
                taken = self.claim(true)?;
                &taken
            }
        };
        claim.make_exclusive(self)?;
        // The manifest and its locks go last: a run killed while removing leaves a folder
        // that is still a job of RAVE's (the next run resumes or removes it), not segment
        // files nothing claims.
        let names = in_removal_order(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| is_raves(name))
                .collect(),
        );
        for name in names {
            match std::fs::remove_file(self.dir.join(&name)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.error(format!("cannot remove {name}: {e}"))),
            }
        }
        // Not empty: files of others stay, and so does the folder.
        let _ = std::fs::remove_dir(&self.dir);
        Ok(())
    }

    fn error(&self, reason: String) -> EngineError {
        EngineError::OutputUnwritable {
            path: self.dir.clone(),
            reason: format!("work folder: {reason}"),
        }
    }
}

/// Whether `name` is, or on a case-insensitive file system (exFAT, CIFS) would be, one of
/// RAVE's segment files (finished, partial, being written).
fn is_segment_file(name: &str) -> bool {
    matches!(
        work_files::classify(&name.to_lowercase()),
        Some(WorkFile::Segment | WorkFile::Partial | WorkFile::Temp { .. })
    )
}

/// RAVE's file `names` in the order they are removed: the segment files first; then the
/// manifest (the folder is no job any more); its lock; the job lock last (held until then,
/// so no other run claims the job while its manifest is still there).
fn in_removal_order(mut names: Vec<String>) -> Vec<String> {
    let rank = |name: &String| match name.as_str() {
        "job.lock" => 3,
        "manifest.lock" => 2,
        _ if work_files::classify(name) == Some(WorkFile::Bookkeeping) => 1,
        _ => 0,
    };
    names.sort_by_key(rank);
    names
}

/// Whether `name` is one of the files RAVE keeps in a work folder (manifest, locks,
/// segment files, their temporary forms).
fn is_raves(name: &str) -> bool {
    work_files::classify(name).is_some()
}

#[cfg(test)]
pub(crate) mod tests;
