//! Settling a segment worker's file: a complete one is checked against the plan, synced and
//! renamed into place and marked done in the manifest, unless another worker finished the
//! same segment first (then it is dropped: one result wins).

use std::path::Path;

use rave_core::error::{EngineError, Result};

use super::fingerprint::file_sha256;
use super::manifest::SegmentState;
use super::plan::PlannedSegment;
use super::work_folder::{WorkFolder, sync_and_rename};
use crate::segment_sink::SegmentOutcome;

/// Who a worker is, for the manifest: `host:pid`.
pub fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// Mark segment `index` as being worked on (for `rave status`); a done one is left alone.
pub fn mark_running(work: &WorkFolder, index: usize) -> Result<()> {
    let mut locked = work.lock()?;
    let seg = entry(&mut locked.manifest, index, work)?;
    if seg.state != SegmentState::Done {
        seg.state = SegmentState::Running;
        seg.worker = Some(worker_name());
        locked.save()?;
    }
    Ok(())
}

/// Segment `index`, which this process worked on, was not finished (a failure, a stop):
/// pending again, so `rave status` does not show it running for a worker that has ended.
/// A segment done, or taken since by another worker, is left alone.
pub fn mark_unfinished(work: &WorkFolder, index: usize) -> Result<()> {
    let mut locked = work.lock()?;
    let seg = entry(&mut locked.manifest, index, work)?;
    if seg.state == SegmentState::Running && seg.worker.as_deref() == Some(&worker_name()) {
        seg.state = SegmentState::Pending;
        seg.worker = None;
        locked.save()?;
    }
    Ok(())
}

/// Put a finished segment file `temp` in place. `strict`: the frames written must be the
/// planned ones (a seam that lost or repeated a frame is a bug, not damage). Returns
/// whether this worker's file is the one kept.
pub fn commit_segment(
    work: &WorkFolder,
    plan: &PlannedSegment,
    temp: &Path,
    outcome: &SegmentOutcome,
    strict: bool,
) -> Result<bool> {
    if strict && outcome.frames != plan.frames {
        let _ = std::fs::remove_file(temp);
        return Err(EngineError::InvariantViolation(format!(
            "segment {} (frames {}-{}) decoded {} frames where the plan has {}",
            plan.index,
            plan.first_frame,
            plan.first_frame + plan.frames.saturating_sub(1),
            outcome.frames,
            plan.frames
        )));
    }
    let bytes = std::fs::metadata(temp)?.len();
    let sha256 = file_sha256(temp)?;
    let mut locked = work.lock()?;
    let seg = entry(&mut locked.manifest, plan.index, work)?;
    if seg.state == SegmentState::Done {
        drop(locked);
        let _ = std::fs::remove_file(temp);
        return Ok(false);
    }
    let name = WorkFolder::segment_name(plan.index);
    sync_and_rename(temp, &work.file(&name))?;
    seg.state = SegmentState::Done;
    seg.file = Some(name);
    seg.sha256 = Some(sha256);
    seg.bytes = Some(bytes);
    seg.frames_written = Some(outcome.frames);
    seg.first_pts = outcome.first_pts;
    seg.decode = Some(outcome.decode.clone());
    let whole = plan.start_pts.is_none() && plan.end_pts.is_none();
    seg.whole_file_damage = whole.then(|| outcome.damage.clone());
    locked.save()?;
    Ok(true)
}

/// Segment `index` of the manifest just read; an error (not a panic) when the manifest no
/// longer has it: the job was planned again while this run worked on it.
fn entry<'m>(
    manifest: &'m mut super::manifest::Manifest,
    index: usize,
    work: &WorkFolder,
) -> Result<&'m mut super::manifest::SegmentEntry> {
    manifest
        .segments
        .get_mut(index)
        .ok_or_else(|| EngineError::WorkFolderMismatch {
            work: work.path().to_path_buf(),
            reason: format!(
                "its manifest no longer has segment {index}: the job was planned again while this run worked on it"
            ),
        })
}
