//! Settling a segment worker's file: a complete one is checked against the plan, synced and
//! renamed into place and marked done in the manifest, unless another worker finished the
//! same segment first (then it is dropped: one result wins).

use std::path::Path;

use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};

use super::durable_write::sync_and_rename;
use super::fingerprint::file_sha256;
use super::manifest::SegmentState;
use super::plan::PlannedSegment;
use super::work_folder::WorkFolder;
use crate::segment_sink::SegmentOutcome;

/// Who a worker is, for the manifest: `host:pid`.
pub fn worker_name() -> String {
    format!("{}:{}", super::work_files::this_host(), std::process::id())
}

/// Whether the worker `name` (as [`worker_name`] wrote it) is known to have ended: a process
/// of this host that no longer exists (a run killed, or aborted by a second Ctrl+C, before
/// it could mark its segments pending again). A worker of another host may still run.
pub fn worker_has_ended(name: &str) -> bool {
    let Some((host, pid)) = name.rsplit_once(':') else {
        return false;
    };
    pid.parse::<i32>()
        .is_ok_and(|pid| !super::work_files::temp_owner_may_run(Some(host), pid))
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

/// What to do when a segment of a damaged input decoded other frames than planned.
const CUT_DAMAGE_HINT: &str = "; its frames do not match the plan made from its timestamps, so it cannot be cut into segments: pass --allow-corrupt --segment-frames 1000000000 to upscale what can be read as one segment (the report counts what is missing)";

/// Whether `err` refuses an input whose damage changed a segment's frames, so that no
/// plan of several segments can be kept.
pub fn cannot_be_cut(err: &EngineError) -> bool {
    matches!(err, EngineError::CorruptStream { hint, .. } if hint == CUT_DAMAGE_HINT)
}

/// How a finished segment's frames are held against its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameCheck {
    /// One of several segments: its frames must be the planned ones (on clean input a seam
    /// that lost or repeated a frame is a bug; where the segment's decode saw damage, the
    /// input is refused as damaged and cannot be cut).
    Segments,
    /// The input read as one segment without --allow-corrupt: a frame the decoder dropped
    /// without a word (the report of a read that stops early cannot see it) is damage.
    OneSegment,
    /// The input read as one segment with --allow-corrupt: what is missing is counted.
    Counted,
}

impl FrameCheck {
    /// The check for a plan of `segments` segments.
    pub fn for_plan(segments: usize, allow_corrupt: bool) -> Self {
        match (segments > 1, allow_corrupt) {
            (true, _) => Self::Segments,
            (false, false) => Self::OneSegment,
            (false, true) => Self::Counted,
        }
    }
}

/// Frames of `plan` the decoder gave no picture for although every one of their packets
/// reached it, where the decode saw no damage: a lost reference picture, damage of the
/// input, not a seam of RAVE's. (Interlaced video may code a frame as two field packets.)
fn silently_dropped(plan: &PlannedSegment, outcome: &SegmentOutcome) -> Option<u64> {
    (outcome.damage.is_clean()
        && !outcome.decode.interlaced
        && outcome.frames < plan.frames
        && outcome.stats.packets_in_bounds >= plan.frames)
        .then(|| plan.frames - outcome.frames)
}

/// `damage` with `missing` frames of `plan` the decoder gave no picture for.
fn with_dropped(damage: &InputDamage, plan: &PlannedSegment, missing: u64) -> InputDamage {
    InputDamage {
        frames_missing: damage.frames_missing.max(missing),
        first_problem: damage.first_problem.clone().or_else(|| {
            Some(format!(
                "the decoder gave no picture for {missing} of the {} packets of frames {}-{}",
                plan.frames,
                plan.first_frame,
                plan.first_frame + plan.frames.saturating_sub(1)
            ))
        }),
        ..damage.clone()
    }
}

/// Put a finished segment file `temp` of `input` in place, once its frames pass `check`,
/// in the job `job_id` of `work` (the plan the worker read). Returns whether this worker's
/// file is the one kept.
pub fn commit_segment(
    (work, job_id): (&WorkFolder, &str),
    (input, plan): (&Path, &PlannedSegment),
    temp: &Path,
    outcome: &SegmentOutcome,
    check: FrameCheck,
) -> Result<bool> {
    let refused = |damage: InputDamage, hint: &str| {
        let _ = std::fs::remove_file(temp);
        Err(EngineError::CorruptStream {
            path: input.to_path_buf(),
            damage: Box::new(damage),
            hint: hint.into(),
        })
    };
    let dropped = silently_dropped(plan, outcome);
    if check == FrameCheck::Segments && outcome.frames != plan.frames {
        let damage = match (outcome.damage.is_clean(), dropped) {
            (false, _) => Some(outcome.damage.clone()),
            (true, Some(missing)) => Some(with_dropped(&outcome.damage, plan, missing)),
            (true, None) => None,
        };
        if let Some(damage) = damage {
            return refused(damage, CUT_DAMAGE_HINT);
        }
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
    if check == FrameCheck::OneSegment
        && let Some(missing) = dropped
    {
        return refused(
            with_dropped(&outcome.damage, plan, missing),
            crate::stages::CORRUPT_HINT,
        );
    }
    let gone = |e: std::io::Error| EngineError::OutputUnwritable {
        path: temp.to_path_buf(),
        reason: format!(
            "the finished segment's file cannot be read ({e}): removed by another process? run the segment again"
        ),
    };
    let bytes = std::fs::metadata(temp).map_err(gone)?.len();
    let sha256 = file_sha256(temp).map_err(gone)?;
    let mut locked = work.lock()?;
    if locked.manifest.job_id != job_id {
        drop(locked);
        let _ = std::fs::remove_file(temp);
        return Err(EngineError::WorkFolderMismatch {
            work: work.path().to_path_buf(),
            reason: format!(
                "the job was planned again while this worker upscaled its segment {} (another plan is there now); the segment is not kept in it",
                plan.index
            ),
        });
    }
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
    seg.whole_file_damage = whole.then(|| match dropped {
        Some(missing) => with_dropped(&outcome.damage, plan, missing),
        None => outcome.damage.clone(),
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use rave_core::damage::InputDamage;

    fn outcome(frames: u64, damage: InputDamage) -> SegmentOutcome {
        SegmentOutcome {
            index: 1,
            file: None,
            complete: true,
            finalized: true,
            frames,
            decode: Default::default(),
            damage,
            stats: Default::default(),
            first_pts: Some(0),
        }
    }

    /// A segment that decoded other frames than planned is a bug on clean input, and the
    /// input's damage where its decode saw some: refused as damaged (exit 3), the file gone.
    #[test]
    fn a_segment_short_of_its_plan_is_damage_only_where_damage_was_seen() {
        let dir = tempfile::tempdir().unwrap();
        let work = WorkFolder::at(&dir.path().join("work"));
        let plan = PlannedSegment {
            index: 1,
            first_frame: 10,
            frames: 10,
            start_pts: Some(10),
            end_pts: Some(20),
            seek_pts: Some(10),
        };
        let input = Path::new("/videos/in.mp4");
        let temp = dir.path().join("seg.tmp");
        std::fs::write(&temp, b"x").unwrap();
        let clean = commit_segment(
            (&work, ""),
            (input, &plan),
            &temp,
            &outcome(8, InputDamage::default()),
            FrameCheck::Segments,
        );
        assert!(
            matches!(clean, Err(EngineError::InvariantViolation(_))),
            "{clean:?}"
        );
        std::fs::write(&temp, b"x").unwrap();
        let damage = InputDamage {
            frames_read: 10,
            frames_decoded: 10,
            frames_dropped: 2,
            ..Default::default()
        };
        let err = commit_segment(
            (&work, ""),
            (input, &plan),
            &temp,
            &outcome(8, damage),
            FrameCheck::Segments,
        )
        .unwrap_err();
        assert_eq!(err.family().exit_code(), 3, "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with("/videos/in.mp4: damaged input: 2 duplicated frames dropped; its frames do not match the plan"),
            "{text}"
        );
        assert!(!temp.exists(), "the segment's file is removed");
        assert!(cannot_be_cut(&err));
    }

    /// One segment whose decoder dropped a picture without a word (every packet reached
    /// it): refused as damaged without --allow-corrupt, counted missing with it.
    #[test]
    fn a_whole_input_short_of_its_plan_is_damage_said_or_counted() {
        let dir = tempfile::tempdir().unwrap();
        let work = WorkFolder::at(&dir.path().join("work"));
        let plan = PlannedSegment {
            index: 0,
            first_frame: 0,
            frames: 5,
            start_pts: None,
            end_pts: None,
            seek_pts: None,
        };
        let input = Path::new("/videos/capture.ts");
        let temp = dir.path().join("seg.tmp");
        let read = InputDamage {
            frames_read: 67,
            frames_decoded: 4,
            ..Default::default()
        };
        let mut short = outcome(4, read);
        short.stats.packets_in_bounds = 67;
        std::fs::write(&temp, b"x").unwrap();
        let err = commit_segment(
            (&work, ""),
            (input, &plan),
            &temp,
            &short,
            FrameCheck::for_plan(1, false),
        )
        .unwrap_err();
        assert_eq!(err.family().exit_code(), 3, "{err}");
        assert_eq!(
            err.to_string(),
            "/videos/capture.ts: damaged input: at least 1 video frame missing; first problem: the decoder gave no picture for 1 of the 5 packets of frames 0-4; pass --allow-corrupt to upscale what can be read (the report counts what is missing)"
        );
        assert!(!cannot_be_cut(&err));
        assert!(!temp.exists(), "the file is removed");
        // With --allow-corrupt the frame is counted missing in the report.
        assert_eq!(FrameCheck::for_plan(1, true), FrameCheck::Counted);
        let counted = with_dropped(
            &short.damage,
            &plan,
            silently_dropped(&plan, &short).unwrap(),
        );
        assert_eq!(counted.frames_missing, 1);
        // Fewer packets than planned frames reached the decoder, damage was seen, or the
        // video is interlaced (two field packets a frame): not this check's to say.
        let mut unread = short.clone();
        unread.stats.packets_in_bounds = 4;
        let mut damaged = short.clone();
        damaged.damage.decoder_errors = 1;
        let mut fields = short.clone();
        fields.decode.interlaced = true;
        for other in [unread, damaged, fields] {
            assert_eq!(silently_dropped(&plan, &other), None, "{other:?}");
        }
    }

    /// A worker that read one plan does not put its segment into another planned in the
    /// same folder while it ran (a sweep saw another input's frames in a "complete" output).
    #[test]
    fn a_segment_goes_only_into_the_plan_its_worker_read() {
        let dir = tempfile::tempdir().unwrap();
        let work = WorkFolder::at(&dir.path().join("work"));
        work.create().unwrap();
        let mut replanned = crate::segments::work_folder::tests::manifest_of("/videos/b.mp4");
        replanned.job_id = "the new plan".into();
        assert!(work.write_first(&replanned).unwrap());
        let plan = PlannedSegment {
            index: 0,
            first_frame: 0,
            frames: 10,
            start_pts: None,
            end_pts: Some(10),
            seek_pts: None,
        };
        let temp = dir.path().join("seg.tmp");
        std::fs::write(&temp, b"frames of a.mp4").unwrap();
        let err = commit_segment(
            (&work, "the plan it read"),
            (Path::new("/videos/a.mp4"), &plan),
            &temp,
            &outcome(10, InputDamage::default()),
            FrameCheck::Segments,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("planned again while this worker"), "{err}");
        assert!(!temp.exists(), "its file is removed");
    }
}
