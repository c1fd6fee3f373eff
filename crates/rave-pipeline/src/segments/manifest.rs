//! The job manifest (`manifest.json` in the work folder, versioned): the input's
//! fingerprint, the output-affecting settings, the options to run a segment anywhere, and per
//! segment its frames, state, file, checksum and what decoding it saw. Every change is a
//! read-modify-write under the work folder's lock, written atomically.

use std::path::{Path, PathBuf};

use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use serde::{Deserialize, Serialize};

use super::fingerprint::{InputFingerprint, OutputSettings};
use super::plan::PlannedSegment;

/// The manifest format this RAVE writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// Where a segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentState {
    /// Not started, or started by a worker that has not finished it.
    Pending,
    /// A worker is on it (or was, and stopped without finishing).
    Running,
    /// Its file is complete, synced and in place.
    Done,
}

/// What decoding a segment saw (summed into the job's report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SegmentDecode {
    /// Frames decoded within the segment.
    pub frames: u64,
    /// Of them, decoded on NVDEC.
    pub nvdec_frames: u64,
    /// Why the segment was decoded in software although NVDEC was offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvdec_refused: Option<String>,
    /// Timestamps repaired.
    pub timestamp_fixes: u64,
    /// Frames the decoder flagged as damaged.
    pub frames_damaged: u64,
    /// Frames dropped as duplicates.
    pub frames_dropped: u64,
    /// Frames timed out of line, put back in place (absent in manifests of older runs).
    #[serde(default)]
    pub frames_moved: u64,
    /// Errors the decoder reported.
    pub decoder_errors: u64,
    /// The first problem, in words.
    pub first_problem: Option<String>,
    /// Whether a decoded frame was interlaced.
    pub interlaced: bool,
    /// Frames that carried closed captions (absent in manifests of older runs).
    #[serde(default)]
    pub captioned_frames: u64,
}

impl SegmentDecode {
    /// The decoding counts of a segment reader's damage.
    pub fn of(damage: &InputDamage, stats: &rave_ffmpeg::DecodeStats, interlaced: bool) -> Self {
        Self {
            frames: stats.frames,
            nvdec_frames: stats.nvdec_frames,
            nvdec_refused: stats.nvdec_refused.clone(),
            timestamp_fixes: stats.timestamp_fixes,
            frames_damaged: damage.frames_damaged,
            frames_dropped: damage.frames_dropped,
            frames_moved: damage.frames_moved,
            decoder_errors: damage.decoder_errors,
            first_problem: damage.first_problem.clone(),
            interlaced,
            captioned_frames: stats.captioned_frames,
        }
    }
}

/// One segment of the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// Its frames and where decoding starts.
    #[serde(flatten)]
    pub plan: PlannedSegment,
    /// Where it is.
    pub state: SegmentState,
    /// Its file in the work folder, once done.
    pub file: Option<String>,
    /// SHA-256 of the file.
    pub sha256: Option<String>,
    /// Size of the file in bytes.
    pub bytes: Option<u64>,
    /// Frames the file holds.
    pub frames_written: Option<u64>,
    /// Timestamp of its first frame (video time base).
    pub first_pts: Option<i64>,
    /// Who is or was on it (host:pid), and since when (Unix seconds).
    pub worker: Option<String>,
    /// What decoding it saw.
    pub decode: Option<SegmentDecode>,
    /// The reader's whole account of damage, for a segment that is the whole file.
    pub whole_file_damage: Option<InputDamage>,
}

impl SegmentEntry {
    /// A pending segment of the plan.
    pub fn pending(plan: PlannedSegment) -> Self {
        Self {
            plan,
            state: SegmentState::Pending,
            file: None,
            sha256: None,
            bytes: None,
            frames_written: None,
            first_pts: None,
            worker: None,
            decode: None,
            whole_file_damage: None,
        }
    }
}

/// The manifest of one job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version (`MANIFEST_VERSION`).
    pub version: u32,
    /// This plan's own name: a worker's segment goes only into the plan it read (a folder
    /// planned again while it ran holds another job, whatever its input). Empty in
    /// manifests of older plans.
    #[serde(default)]
    pub job_id: String,
    /// The RAVE that planned the job.
    pub planned_by: String,
    /// The input file (absolute).
    pub input: PathBuf,
    /// The output file (absolute).
    pub output: PathBuf,
    /// The model file (absolute).
    pub model: PathBuf,
    /// The input's identity.
    pub fingerprint: InputFingerprint,
    /// Every output-affecting setting.
    pub settings: OutputSettings,
    /// The `rave upscale` options of the job (without -i/-o/-m), so any worker runs the
    /// same settings.
    pub options: Vec<String>,
    /// The folder the job was planned from (relative paths in `options` are relative to it).
    #[serde(default)]
    pub invocation_dir: PathBuf,
    /// Replace an existing output when assembling.
    pub overwrite: bool,
    /// Frames in the job.
    pub frames_total: u64,
    /// The job stops before the video's end (`--max-frames` under its frame count): the
    /// copied streams end with its last frame.
    #[serde(default)]
    pub ends_early: bool,
    /// How long the input video's last frame lasts, in its time base (the output's last
    /// frame lasts as long: an MP4 muxer would give it the nominal rate's frame, half of
    /// it at the end of a variable-rate video). Absent in manifests of older plans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_frame_ticks: Option<i64>,
    /// The finished output as it took its name (written just before): a run that dies
    /// before removing the work folder leaves it to the next run to remove (see
    /// `job::remove_finished_work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assembled: Option<InputFingerprint>,
    /// Target segment length in frames.
    pub segment_frames: u64,
    /// Why the video is one segment, when it is for a reason other than its length.
    pub single_reason: Option<String>,
    /// What the plan's reading of the whole input found (container-level damage).
    pub input_damage: InputDamage,
    /// The segments in order.
    pub segments: Vec<SegmentEntry>,
    /// The partial outputs (`NAME.partial.EXT`, absolute) that interrupted runs of this job
    /// kept: superseded once it completes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_outputs: Vec<PathBuf>,
}

/// Why a folder holding someone else's manifest.json is not taken as a work folder.
pub const NOT_RAVES: &str = "is not a RAVE work folder: its manifest.json was not written by RAVE, and RAVE will not touch it (--restart included); choose another --work folder";

impl Manifest {
    /// Read the manifest at `path`; a missing, unreadable or foreign file is a clear error.
    pub fn read(path: &Path, work: &Path) -> Result<Self> {
        let invalid = |reason: String| EngineError::WorkFolderMismatch {
            work: work.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if !work.exists() => invalid(
                "does not exist: no job was planned there (check the --work path, or plan the job first with `rave plan`)"
                    .into(),
            ),
            std::io::ErrorKind::NotFound => invalid(
                "is not a RAVE work folder (no manifest.json); plan the job first with `rave plan`"
                    .into(),
            ),
            _ => invalid(format!("cannot read manifest.json: {e}")),
        })?;
        let version: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| invalid(format!("manifest.json is not valid JSON ({e}); it was damaged: plan the job again with --restart (where the folder holds no segment of RAVE's, remove the folder instead)")))?;
        let by_rave = version
            .get("planned_by")
            .and_then(|v| v.as_str())
            .is_some_and(|s| s.starts_with("rave "));
        if !by_rave {
            return Err(invalid(NOT_RAVES.into()));
        }
        let found = version.get("version").and_then(|v| v.as_u64());
        if found != Some(u64::from(MANIFEST_VERSION)) {
            return Err(invalid(format!(
                "manifest.json has version {}, this RAVE reads version {MANIFEST_VERSION}; finish the job with the RAVE that planned it ({}), or plan it again with --restart",
                found.map_or("none".into(), |v| v.to_string()),
                version
                    .get("planned_by")
                    .and_then(|v| v.as_str())
                    .unwrap_or("unknown")
            )));
        }
        let manifest: Self = serde_json::from_value(version).map_err(|e| {
            invalid(format!(
                "manifest.json was damaged ({e}): plan the job again with --restart"
            ))
        })?;
        manifest.incoherence().map_or(Ok(manifest), |why| {
            Err(invalid(format!(
                "manifest.json was damaged or edited ({why}): its segments would not make the whole video; plan the job again with --restart"
            )))
        })
    }

    /// Why the segments cannot be the job's frames, in order and without a gap or an
    /// overlap (a manifest edited by hand or damaged); `None` for one RAVE planned.
    fn incoherence(&self) -> Option<String> {
        if self.segments.is_empty() {
            return Some("it lists no segment".into());
        }
        let mut next_frame = 0;
        let mut next_pts = None;
        for (i, seg) in self.segments.iter().enumerate() {
            let plan = &seg.plan;
            if plan.index != i {
                return Some(format!("segment {i} is numbered {}", plan.index));
            }
            if plan.first_frame != next_frame || plan.start_pts != next_pts {
                return Some(format!(
                    "segment {i} does not start where the one before it ends"
                ));
            }
            if seg.state == SegmentState::Done && seg.file.is_none() {
                return Some(format!("segment {i} is done but names no file"));
            }
            next_frame += plan.frames;
            next_pts = plan.end_pts;
            if next_pts.is_none() && i + 1 < self.segments.len() {
                return Some(format!(
                    "segment {i} runs to the end of the video, yet more follow"
                ));
            }
        }
        if next_frame != self.frames_total {
            return Some(format!(
                "its segments hold {next_frame} frames, the job {}",
                self.frames_total
            ));
        }
        if next_pts.is_some() && !self.ends_early {
            return Some("its last segment stops before the end of the video".into());
        }
        None
    }

    /// Write the manifest to `path` atomically (temporary file, synced, renamed).
    pub fn write(&self, path: &Path) -> Result<()> {
        super::durable_write::write_atomically(path, self.text()?.as_bytes())
    }

    /// Write the manifest to `path` only where no file has that name (atomically, also
    /// against another host on shared storage); whether it was written.
    pub fn write_new(&self, path: &Path) -> Result<bool> {
        super::durable_write::write_atomically_new(path, self.text()?.as_bytes())
    }

    fn text(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| EngineError::InvariantViolation(format!("manifest: {e}")))
    }

    /// Indices of the segments not done.
    pub fn missing(&self) -> Vec<usize> {
        self.segments
            .iter()
            .filter(|s| s.state != SegmentState::Done)
            .map(|s| s.plan.index)
            .collect()
    }

    /// Frames in the segments done.
    pub fn frames_done(&self) -> u64 {
        self.segments
            .iter()
            .filter(|s| s.state == SegmentState::Done)
            .map(|s| s.plan.frames)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::work_folder::tests::manifest_of;

    /// A job of 30 frames in three planned segments of 10, cut at pts 1000 and 2000.
    fn three_segments() -> Manifest {
        let mut m = manifest_of("/in.mp4");
        m.frames_total = 30;
        m.segments = (0..3)
            .map(|i| {
                SegmentEntry::pending(PlannedSegment {
                    index: i,
                    first_frame: i as u64 * 10,
                    frames: 10,
                    start_pts: (i > 0).then_some(i as i64 * 1000),
                    end_pts: (i < 2).then_some((i as i64 + 1) * 1000),
                    seek_pts: (i > 0).then_some(i as i64 * 1000),
                })
            })
            .collect();
        m
    }

    fn read_back(m: &Manifest) -> std::result::Result<Manifest, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        m.write(&path).unwrap();
        Manifest::read(&path, dir.path()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_planned_manifest_reads_back() {
        assert!(three_segments().incoherence().is_none());
        read_back(&three_segments()).unwrap();
        let mut early = three_segments();
        early.segments[2].plan.end_pts = Some(3000);
        early.ends_early = true;
        read_back(&early).unwrap();
    }

    #[test]
    fn an_edited_manifest_that_would_make_a_short_video_is_refused() {
        let mut dropped = three_segments();
        dropped.segments.remove(1);
        let mut shifted = three_segments();
        shifted.segments[1].plan.first_frame = 12;
        let mut fewer = three_segments();
        fewer.frames_total = 20;
        let mut short = three_segments();
        short.segments[2].plan.frames = 5;
        let mut stops = three_segments();
        stops.segments[2].plan.end_pts = Some(2500);
        let mut gap = three_segments();
        gap.segments[2].plan.start_pts = Some(2100);
        let mut none = three_segments();
        none.segments.clear();
        let mut nameless = three_segments();
        nameless.segments[0].state = SegmentState::Done;
        for (m, why) in [
            (dropped, "segment 1 is numbered 2"),
            (shifted, "segment 1 does not start where"),
            (fewer, "hold 30 frames, the job 20"),
            (short, "hold 25 frames, the job 30"),
            (stops, "last segment stops before the end"),
            (gap, "segment 2 does not start where"),
            (none, "lists no segment"),
            (nameless, "segment 0 is done but names no file"),
        ] {
            let err = read_back(&m).unwrap_err();
            assert!(
                err.contains(why) && err.contains("--restart"),
                "{why}: {err}"
            );
        }
    }
}
