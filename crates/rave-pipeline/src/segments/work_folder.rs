//! The work folder of a job: `manifest.json`, its lock, and one video-only file per finished
//! segment (`seg-NNNNN.mp4`). A segment's file is written under a name of its own worker,
//! synced, and renamed into place under the lock only if no other worker finished it first:
//! two workers on the same segment leave one good file.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};

use super::manifest::Manifest;
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
                    false => "the job is being discarded by another RAVE process (--restart)".into(),
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
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_default_work_folder_is_hidden_beside_the_output() {
        let w = WorkFolder::beside(Path::new("/videos/film.mkv"));
        assert_eq!(w.path(), Path::new("/videos/.film.mkv.rave-work"));
        let here = WorkFolder::beside(Path::new("film.mp4"));
        assert_eq!(here.path(), Path::new("./.film.mp4.rave-work"));
    }

    #[test]
    fn leftovers_of_dead_workers_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        let live = w.segment_temp(3);
        std::fs::write(&live, b"x").unwrap();
        let dead = dir.path().join(".seg-00004.999999999-0.tmp.mp4");
        std::fs::write(&dead, b"x").unwrap();
        let partial = w.segment_partial(5);
        std::fs::write(&partial, b"x").unwrap();
        let done = w.file(&WorkFolder::segment_name(1));
        std::fs::write(&done, b"x").unwrap();
        w.sweep_leftovers();
        assert!(live.exists() && done.exists());
        assert!(!dead.exists() && !partial.exists());
    }

    #[test]
    fn a_job_being_worked_on_cannot_be_claimed_for_discarding() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        let worker = w.claim(false).unwrap();
        let other_worker = w.claim(false).unwrap();
        let refused = w.claim(true).unwrap_err().to_string();
        assert!(
            refused.contains("another RAVE process is working on this job"),
            "{refused}"
        );
        drop((worker, other_worker));
        let discarding = w.claim(true).unwrap();
        let refused = w.claim(false).unwrap_err().to_string();
        assert!(refused.contains("being discarded"), "{refused}");
        drop(discarding);
        w.claim(false).unwrap();
    }

    #[test]
    fn someone_elses_manifest_is_not_a_work_folder_and_is_never_removed_as_ours() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        std::fs::write(
            w.manifest_path(),
            br#"{"name": "webapp", "version": "1.0"}"#,
        )
        .unwrap();
        assert!(!w.holds_rave_manifest());
        let e = w.read().unwrap_err().to_string();
        assert!(e.contains("not written by RAVE"), "{e}");
        assert!(!e.contains("plan it again with --restart"), "{e}");
        std::fs::write(
            w.manifest_path(),
            br#"{"planned_by": "rave 0.1.0", "version": 1}"#,
        )
        .unwrap();
        assert!(w.holds_rave_manifest());
    }

    /// A planned job's manifest for input `input`.
    pub(crate) fn manifest_of(input: &str) -> Manifest {
        serde_json::from_value(serde_json::json!({
            "version": 1, "planned_by": "rave 0.1.0", "input": input, "output": "/o.mkv",
            "model": "/m.onnx",
            "fingerprint": {"bytes": 1, "modified_ns": 1, "ends_sha256": "00"},
            "settings": {"model_sha256": "00", "device": "cpu", "precision": "auto",
                "codec": "h264", "crf": 18, "preset": "medium", "bit_depth": 8,
                "container": "matroska", "max_frames": null, "segment_frames": 10,
                "tiling": "off"},
            "options": [], "invocation_dir": "/", "overwrite": false, "frames_total": 10,
            "ends_early": false, "segment_frames": 10, "single_reason": null,
            "input_damage": {}, "segments": [{"index": 0, "first_frame": 0, "frames": 10,
                "start_pts": null, "end_pts": null, "seek_pts": null, "state": "pending",
                "file": null, "sha256": null, "bytes": null, "frames_written": null,
                "first_pts": null, "worker": null, "decode": null, "whole_file_damage": null}]
        }))
        .unwrap()
    }

    #[test]
    fn a_damaged_manifest_beside_raves_segments_is_raves_to_discard() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        std::fs::write(w.manifest_path(), b"// my notes").unwrap();
        drop(w.claim(false).unwrap());
        assert!(!w.holds_rave_manifest(), "a lock alone proves nothing");
        std::fs::write(w.file("seg-intro.mp4"), b"mine").unwrap();
        assert!(!w.holds_rave_manifest(), "not a name RAVE gives");
        let cut = br#"{"planned_by": "rave 0.1.0", "vers"#;
        std::fs::write(w.manifest_path(), cut).unwrap();
        std::fs::write(w.file("seg-00000.mp4"), b"segment").unwrap();
        std::fs::create_dir(w.file("slurm-logs")).unwrap();
        assert!(
            w.holds_rave_manifest(),
            "cut short, beside a segment (and logs)"
        );
        std::fs::write(w.manifest_path(), b"").unwrap();
        assert!(w.holds_rave_manifest(), "emptied by a power cut");
    }

    #[test]
    fn a_folder_with_segment_names_but_no_job_is_refused_for_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        let output = dir.path().join("out.mkv");
        std::fs::write(w.file("notes.txt"), b"mine").unwrap();
        std::fs::write(w.file("job.lock"), b"").unwrap();
        w.check_unclaimed(&output).unwrap();
        let inside = dir.path().join("seg-00003.mp4");
        let err = w.check_unclaimed(&inside).unwrap_err().to_string();
        assert!(err.contains("would be one of RAVE's work files"), "{err}");
        std::fs::write(w.file("seg-00002.mp4"), b"the user's video").unwrap();
        let err = w.check_unclaimed(&output).unwrap_err().to_string();
        assert!(
            err.contains("holds 1 file(s) named as RAVE names its segments (seg-00002.mp4)"),
            "{err}"
        );
        // On a case-insensitive file system this name is RAVE's segment 2's.
        std::fs::remove_file(w.file("seg-00002.mp4")).unwrap();
        std::fs::write(w.file("SEG-00002.MP4"), b"the user's video").unwrap();
        assert!(w.check_unclaimed(&output).is_err());
        // RAVE's own default folder: such files are what a killed removal left.
        std::fs::write(w.file("seg-00004.mp4"), b"a segment").unwrap();
        w.discard_orphan_segments();
        assert!(!w.file("seg-00004.mp4").exists());
        assert!(w.file("notes.txt").exists() && w.file("SEG-00002.MP4").exists());
        // A job of RAVE's planned there meanwhile is for the caller to resume.
        assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
        w.check_unclaimed(&output).unwrap();
    }

    #[test]
    fn the_manifest_and_locks_are_removed_last() {
        let names = [
            "job.lock",
            "manifest.lock",
            "manifest.json",
            "seg-00001.mp4",
            "seg-00000.partial.mp4",
        ];
        let order = in_removal_order(names.map(String::from).to_vec());
        let want = [
            "seg-00001.mp4",
            "seg-00000.partial.mp4",
            "manifest.json",
            "manifest.lock",
            "job.lock",
        ];
        assert_eq!(order, want);
    }

    #[test]
    fn the_manifest_is_removed_after_the_segments() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(&dir.path().join("work"));
        w.create().unwrap();
        assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
        for i in 0..40 {
            std::fs::write(w.file(&WorkFolder::segment_name(i)), b"s").unwrap();
        }
        // A segment that cannot be removed (a folder of that name) stops the removal: the
        // manifest must still be there, so the folder is still a job of RAVE's.
        std::fs::remove_file(w.file("seg-00039.mp4")).unwrap();
        std::fs::create_dir(w.file("seg-00039.mp4")).unwrap();
        std::fs::write(w.file("seg-00039.mp4/x"), b"x").unwrap();
        assert!(w.remove(None).is_err());
        assert!(w.has_manifest() && w.holds_rave_manifest());
    }

    #[test]
    fn files_of_the_users_with_names_like_raves_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(&dir.path().join("work"));
        w.create().unwrap();
        assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
        let theirs = [
            "seg-intro.mp4",
            "film.partial.mp4",
            ".seg-keep.mp4",
            "notes.txt",
        ];
        for name in theirs {
            std::fs::write(w.file(name), b"mine").unwrap();
        }
        std::fs::write(w.file("seg-00000.mp4"), b"a segment").unwrap();
        std::fs::write(w.file("seg-00001.partial.mp4"), b"a partial one").unwrap();
        w.sweep_leftovers();
        assert!(!w.file("seg-00001.partial.mp4").exists());
        w.remove(None).unwrap();
        assert!(!w.file("seg-00000.mp4").exists() && !w.has_manifest());
        for name in theirs {
            assert!(w.file(name).exists(), "{name}");
        }
    }

    #[test]
    fn a_second_run_planning_in_the_same_folder_does_not_write_over_the_first_ones_job() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(dir.path());
        assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
        assert!(!w.write_first(&manifest_of("/b.mp4")).unwrap());
        assert_eq!(w.read().unwrap().input, Path::new("/a.mp4"));
    }

    #[test]
    fn a_folder_another_process_works_in_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let w = WorkFolder::at(&dir.path().join("work"));
        w.create().unwrap();
        assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
        let ours = w.claim(false).unwrap();
        let theirs = w.claim(false).unwrap();
        let refused = w.remove(Some(&ours)).unwrap_err().to_string();
        assert!(refused.contains("another RAVE process"), "{refused}");
        assert!(w.has_manifest());
        // The failed attempt kept this process's own claim: a discard is still refused.
        drop(theirs);
        assert!(w.claim(true).is_err(), "the shared claim is held again");
        w.remove(Some(&ours)).unwrap();
        assert!(!w.path().exists());
        // Without a claim of its own, the removal takes one.
        w.create().unwrap();
        let theirs = w.claim(false).unwrap();
        assert!(w.remove(None).is_err());
        drop(theirs);
        w.remove(None).unwrap();
        assert!(!w.path().exists());
    }
}
