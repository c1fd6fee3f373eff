//! The job split across machines: `plan` writes the manifest, `segment` processes one
//! segment (idempotent: a done one returns at once; two workers on one segment leave one
//! result), `assemble` writes the output once every segment is done, `status` lists them.
//! Each works on the shared work folder only.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_ffmpeg::{Container, MediaInfo, WriterSummary, probe};
use serde::Serialize;

use super::commit::{FrameCheck, commit_segment, mark_running, mark_unfinished};
use super::done_segments::{verify_done_naming, verify_segment};
use super::finish::{OutputJob, done_prefix, job_damage, write_output};
use super::job::{self, Replan, check_same_files, check_same_job};
use super::manifest::Manifest;
use super::work_folder::WorkFolder;
use super::worker::{JobSpec, RunShared, Worker};
use crate::cancel::{CancelToken, StopReason};
use crate::config::UpscaleConfig;
use crate::gpu_convert::HostCopies;
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::ratio;
use crate::segment_sink::SegmentOutcome;
use crate::stages::PipelineMetrics;

/// The work folder of `config`'s job.
pub fn work_of(config: &UpscaleConfig) -> WorkFolder {
    match &config.segments.work {
        Some(dir) => WorkFolder::at(dir),
        None => WorkFolder::beside(&config.output),
    }
}

/// Plan `config`'s job into its work folder (a job already planned there with the same
/// input and settings is kept as it is). Returns its manifest. What `rave upscale` would
/// refuse before any work is refused here too, not on the workers: an output that exists
/// (without `--overwrite`), is the input or a folder or whose folder is missing, a model
/// ONNX Runtime cannot read, and what every segment would refuse as it starts (see
/// [`refused_by_every_worker`]).
pub fn plan(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<Manifest> {
    OutputTarget::check(&config.output, &config.input, config.overwrite)?;
    let runtime = rave_tensorrt::OrtRuntime::load(&config.runtime_candidates)?;
    let model = rave_tensorrt::LoadedModel::inspect(runtime, &config.model)?;
    let clock = super::startup::StartupClock::new(std::time::Instant::now());
    let mut worker_checks = |info: &MediaInfo| refused_by_every_worker(config, &model, info);
    let job = job::prepare(config, progress, cancel, &mut worker_checks, &clock)?;
    Ok(job.manifest)
}

/// What every `rave segment` of the job would refuse as it starts, refused by the plan
/// instead (as `rave upscale` refuses it before any work): frames the model cannot take
/// even in tiles (or with `--tile off`), an upscaled size the encoder cannot code, and a
/// codec the output's container cannot hold (AV1 in QuickTime).
fn refused_by_every_worker(
    config: &UpscaleConfig,
    model: &rave_core::backend::ModelMetadata,
    info: &MediaInfo,
) -> Result<()> {
    let size = info.frame_size()?;
    crate::tiling_choice::decide(&config.tiling, &config.model, model, size)?;
    let codec = config.encoder.codec;
    rave_ffmpeg::encoder_limits::check_output_size(codec, size, model.scale)?;
    let planned = rave_ffmpeg::stream_plan::PlannedVideo {
        codec,
        width: size.0 * model.scale,
        height: size.1 * model.scale,
        bit_depth: info.video.bit_depth,
        // Whether the container holds the codec does not depend on the time base.
        time_base: ffmpeg_next::Rational::new(1, 90_000),
    };
    let container = Container::from_path(&config.output)?;
    rave_ffmpeg::stream_plan::check_video(container, planned, &config.output)
}

/// What `rave segment` did.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentRunReport {
    /// The segment.
    pub index: usize,
    /// Segments in the job.
    pub total: usize,
    /// It was done before this run (nothing was processed).
    pub already_done: bool,
    /// This run's file is the one kept (another worker may have finished it first).
    pub kept: bool,
    /// Frames processed.
    pub frames: u64,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
    /// Frames per second.
    pub fps: f64,
    /// Where inference ran and why (not where the segment was done before this run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::report::BackendReport>,
    /// Whether frames were cut into tiles (or padded to the model's multiple), and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiling: Option<crate::tiling_choice::TilingReport>,
}

/// Process segment `index` of the job planned in `config`'s work folder.
pub fn run_segment(
    config: &UpscaleConfig,
    index: usize,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<SegmentRunReport> {
    let started = Instant::now();
    let work = work_of(config);
    work.check_input_outside(&config.input)?;
    let manifest = work.read()?;
    let total = manifest.segments.len();
    let Some(entry) = manifest.segments.get(index) else {
        return Err(EngineError::Config(format!(
            "segment index {index} is out of range: the job in {} has {total} segments (0 to {})",
            work.path().display(),
            total.saturating_sub(1)
        )));
    };
    let mut report = SegmentRunReport {
        index,
        total,
        // A done segment whose file went missing or changed is redone.
        already_done: verify_segment(&work, index)?,
        kept: false,
        frames: 0,
        elapsed_s: 0.0,
        fps: 0.0,
        backend: None,
        tiling: None,
    };
    if report.already_done {
        return Ok(report);
    }
    let _claim = work.claim(false)?;
    if !config.input.exists() {
        return Err(EngineError::InputUnreadable {
            path: config.input.clone(),
            reason: "not found on this machine: a segment worker reads the input at the path the job was planned with; give every worker the same paths (the shared storage mounted where the planning machine has it)".into(),
        });
    }
    let bit_depth = manifest.settings.bit_depth;
    check_same_job(&manifest, config, (&work, Replan::WithRavePlan), bit_depth)?;
    let spec = JobSpec {
        config: config.clone(),
        container: Container::from_path(&config.output)?,
        in_size: probe(&config.input)?.frame_size()?,
        bit_depth,
        structure: None,
        nvenc_everywhere: Default::default(),
        skip_before_keyframe: manifest.input_damage.frames_before_first_keyframe > 0,
        damaged: !manifest.input_damage.is_clean(),
    };
    let mut worker = Worker::start(&spec, cancel)?;
    report.backend = Some(worker.info.report.clone());
    report.tiling = Some(worker.info.tiling.clone());
    mark_running(&work, index)?;
    let temp = work.segment_temp(index);
    let metrics = PipelineMetrics::default();
    let copies = Arc::new(HostCopies::default());
    progress.started(Some(entry.plan.frames));
    let shared = RunShared {
        progress,
        cancel,
        metrics: &metrics,
        copies: &copies,
    };
    let mut given = Some((entry.plan.clone(), Some(temp.clone())));
    let mut next = || Ok(given.take());
    let settled: Mutex<Option<SegmentOutcome>> = Mutex::new(None);
    let settle = |o: SegmentOutcome| {
        *settled.lock().unwrap_or_else(|e| e.into_inner()) = Some(o);
        Ok(())
    };
    let run = worker.run_segments(&spec, &mut next, &settle, &shared);
    progress.finished();
    worker.shutdown();
    let settled = settled.into_inner().unwrap_or_else(|e| e.into_inner());
    let outcome = match (run, settled) {
        (Ok(()), Some(o)) if o.complete => o,
        (run, _) => {
            let _ = std::fs::remove_file(&temp);
            // Bookkeeping for `rave status` only: the error below is what the run reports.
            mark_unfinished(&work, index).ok();
            return Err(match (run, cancel.reason()) {
                (Err(e), Some(StopReason::Failure) | None) => e,
                (Ok(()), None) => EngineError::InvariantViolation(format!(
                    "segment {index} ended without all its frames"
                )),
                _ => EngineError::Cancelled,
            });
        }
    };
    let segment = (spec.config.input.as_path(), &entry.plan);
    report.kept = commit_segment(
        (&work, &manifest.job_id),
        segment,
        &temp,
        &outcome,
        FrameCheck::for_plan(total, spec.config.allow_corrupt),
    )
    .inspect_err(|_| {
        // Not left "running" for `rave status` by a worker that has ended.
        mark_unfinished(&work, index).ok();
    })?;
    report.frames = outcome.frames;
    report.elapsed_s = started.elapsed().as_secs_f64();
    report.fps = ratio(outcome.frames as f64, report.elapsed_s);
    Ok(report)
}

/// What `rave assemble` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct AssembleReport {
    /// The output file.
    pub output: PathBuf,
    /// Frames in it.
    pub frames: u64,
    /// Segments joined.
    pub segments: usize,
    /// What the input lacked (all zero for a clean one).
    pub input_damage: InputDamage,
    /// The muxer's account (streams copied).
    pub mux: WriterSummary,
    /// The work folder, when it is kept (`--keep-work`).
    pub work_kept: Option<PathBuf>,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
}

/// Write the output of the job in `config`'s work folder; fails naming the segments that
/// are not done.
pub fn assemble(config: &UpscaleConfig, cancel: &CancelToken) -> Result<AssembleReport> {
    let started = Instant::now();
    let work = work_of(config);
    work.check_input_outside(&config.input)?;
    let planned = work.read()?;
    // The segments hold the upscaled frames: the model (perhaps not on this node) is not
    // read again.
    check_same_files(&planned, config, (&work, Replan::WithRavePlan))?;
    // Held while the segments are read: another process finishing (a second assemble, a
    // late worker) leaves the folder to this one.
    let claim = work.claim(false)?;
    let (manifest, not_intact) = verify_done_naming(&work)?;
    let (changed, gone) = not_intact.into_iter().partition(|f| work.file(f).exists());
    let missing = manifest.missing();
    if !missing.is_empty() {
        return Err(EngineError::SegmentsMissing {
            work: work.path().to_path_buf(),
            missing,
            total: manifest.segments.len(),
            changed,
            gone,
        });
    }
    let target = OutputTarget::prepare(
        &config.output,
        &config.input,
        config.overwrite || manifest.overwrite,
    )?;
    let (files, frames) = done_prefix(&manifest, &work);
    let mut damage = job_damage(&manifest);
    let written = write_output(
        OutputJob {
            manifest: &manifest,
            work: &work,
            config,
            container: Container::from_path(&config.output)?,
            files,
            frames,
            partial: false,
        },
        &target,
        &mut damage,
        cancel,
    )?;
    let work_kept = match config.segments.keep_work {
        true => Some(work.path().to_path_buf()),
        false => work
            .remove(Some(&claim))
            .err()
            .map(|_| work.path().to_path_buf()),
    };
    Ok(AssembleReport {
        output: written.path,
        frames,
        segments: manifest.segments.len(),
        input_damage: damage,
        mux: written.summary,
        work_kept,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}
