//! What each segment worker of a job on this machine does in the pool (`pool.rs`): load the
//! model on its GPU, run the segments its lease hands out through one set of stages, settle
//! each file into the work folder as it finishes, and leave its report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rave_core::error::Result;
use rave_core::gpu::HealthSnapshot;
use rave_tensorrt::backend_report::GpuBackendReport;

use super::commit::{commit_segment, mark_running};
use super::job_progress::JobProgress;
use super::manifest::{SegmentDecode, SegmentEntry};
use super::plan::PlannedSegment;
use super::pool::PoolWork;
use super::queue::Lease;
use super::startup::StartupClock;
use super::work_folder::WorkFolder;
use super::worker::{BackendInfo, JobSpec, LoadTurn, RunShared, Worker};
use crate::backend_choice::Engine;
use crate::cancel::{CancelToken, StopReason};
use crate::gpu_convert::HostCopies;
use crate::progress::ProgressSink;
use crate::report::WorkerShare;
use crate::segment_sink::SegmentOutcome;
use crate::stages::PipelineMetrics;

/// An interrupted segment's finalized file: index, path, frames, first timestamp.
pub type PartialSegment = (usize, PathBuf, u64, Option<i64>);

/// What one worker leaves for the report.
pub struct WorkerReport {
    /// What ran the model.
    pub info: BackendInfo,
    /// The GPU backend's counters and the context's health (None on the CPU).
    pub gpu: Option<(GpuBackendReport, HealthSnapshot)>,
    /// The GPU it ran on (None on the CPU), the frames of the segments it finished, and
    /// the seconds it spent on segments.
    pub share: (Option<usize>, u64, f64),
    /// The NVENC encoder it used, or why it used the software one (`--encoder auto`).
    pub encoder: (Option<&'static str>, Option<String>),
}

/// What the workers of one job read and share.
pub struct JobWork<'a> {
    /// The job.
    pub spec: &'a JobSpec,
    /// Its work folder (`None`: a null sink).
    pub work: Option<&'a WorkFolder>,
    /// The manifest's segments.
    pub segments: &'a [SegmentEntry],
    /// Segments must have exactly their planned frames (a job of several).
    pub strict: bool,
    /// The job's progress (frames written).
    pub progress: &'a JobProgress<'a>,
    /// The job's cancellation (each worker runs on a child of it).
    pub cancel: &'a CancelToken,
    /// The run's start-up clock.
    pub clock: &'a StartupClock,
    /// The job's stage counters.
    pub metrics: &'a PipelineMetrics,
    /// Host copies of the GPU path.
    pub copies: &'a Arc<HostCopies>,
}

/// What the workers of one job leave behind.
#[derive(Default)]
pub struct JobResults {
    /// When the first worker had its model loaded.
    pub stages_started: OnceLock<Instant>,
    /// Segments finished by this run.
    pub processed: AtomicUsize,
    /// Segments interrupted by the user, finalized with the frames done.
    pub partials: Mutex<Vec<PartialSegment>>,
    /// A null sink's segments (not marked done in any manifest).
    pub null_outcomes: Mutex<Vec<(usize, SegmentDecode)>>,
    /// One per worker that loaded.
    pub reports: Mutex<Vec<WorkerReport>>,
    /// The backend choice's warning was given (once for all the workers).
    warned: OnceLock<()>,
}

/// A loaded worker, with what it did so far.
pub struct Running {
    worker: Worker,
    frames: AtomicU64,
    busy: Duration,
}

/// The job's work for the pool: what it reads, and where it leaves its results.
pub struct LocalJob<'a> {
    /// What the workers read.
    pub job: JobWork<'a>,
    /// What they leave.
    pub results: JobResults,
}

impl LocalJob<'_> {
    /// Settle segment `o` of a worker holding `lease`: a complete file is committed (or a
    /// null sink's outcome kept), a file interrupted by the user kept as a partial one,
    /// any other removed; the frames of a segment that failed no longer count as written.
    fn settle(&self, o: SegmentOutcome, lease: &Lease<'_>, frames: &AtomicU64) -> Result<()> {
        let job = &self.job;
        let i = o.index;
        let user_stop = job.cancel.reason() == Some(StopReason::User);
        match (job.work, &o.file) {
            (Some(w), Some(t)) if o.complete => {
                commit_segment(w, &job.segments[i].plan, t, &o, job.strict)?;
                self.results.processed.fetch_add(1, Ordering::Relaxed);
            }
            (None, _) if o.complete => {
                lock(&self.results.null_outcomes).push((i, o.decode.clone()));
                self.results.processed.fetch_add(1, Ordering::Relaxed);
            }
            (Some(w), Some(t)) if o.finalized && o.frames > 0 && user_stop => {
                let kept = w.segment_partial(i);
                std::fs::rename(t, &kept)?;
                lock(&self.results.partials).push((i, kept, o.frames, o.first_pts));
            }
            (_, Some(t)) => {
                let _ = std::fs::remove_file(t);
            }
            _ => {}
        }
        if o.complete {
            frames.fetch_add(o.frames, Ordering::Relaxed);
            lease.finished(i);
        } else if !user_stop {
            job.progress.rewind(o.frames);
        }
        Ok(())
    }
}

impl PoolWork for LocalJob<'_> {
    type Worker = Running;

    fn load(&self, turn: LoadTurn, cancel: &CancelToken) -> Result<Running> {
        let loading = Instant::now();
        let worker = Worker::start_in_turn(self.job.spec, cancel, turn)?;
        self.job.clock.step("load_model", loading);
        self.results.stages_started.get_or_init(Instant::now);
        if let Some(w) = &worker.info.warning {
            self.results
                .warned
                .get_or_init(|| self.job.progress.warning(w));
        }
        Ok(Running {
            worker,
            frames: AtomicU64::new(0),
            busy: Duration::ZERO,
        })
    }

    fn run(&self, r: &mut Running, lease: &Lease<'_>, cancel: &CancelToken) -> Result<()> {
        let job = &self.job;
        let mut next = || -> Result<Option<(PlannedSegment, Option<PathBuf>)>> {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let Some(i) = lease.take() else {
                return Ok(None);
            };
            if let Some(w) = job.work {
                mark_running(w, i)?;
            }
            let temp = job.work.map(|w| w.segment_temp(i));
            Ok(Some((job.segments[i].plan.clone(), temp)))
        };
        let frames = &r.frames;
        let settle = |o: SegmentOutcome| self.settle(o, lease, frames);
        let shared = RunShared {
            progress: job.progress,
            cancel,
            metrics: job.metrics,
            copies: job.copies,
        };
        let busy = Instant::now();
        let result = r.worker.run_segments(job.spec, &mut next, &settle, &shared);
        r.busy += busy.elapsed();
        result
    }

    fn end(&self, r: Running) {
        let Running {
            worker,
            frames,
            busy,
        } = r;
        worker.shutdown();
        let (gpu, on) = match worker.engine() {
            Engine::Gpu(g) => (
                Some((g.backend.counters(), g.ctx.health())),
                Some(worker.gpu_index),
            ),
            Engine::Cpu(_) => (None, None),
        };
        let encoder = (worker.nvenc_encoder(), worker.software_reason.clone());
        lock(&self.results.reports).push(WorkerReport {
            info: worker.info,
            gpu,
            encoder,
            share: (on, frames.into_inner(), busy.as_secs_f64()),
        });
    }
}

/// What each GPU worker of `reports` did (none on the CPU).
pub fn worker_shares(reports: &[WorkerReport]) -> Vec<WorkerShare> {
    reports
        .iter()
        .filter_map(|r| {
            let (gpu, frames, busy) = r.share;
            let health = r.gpu.as_ref().map(|(_, h)| h);
            Some((
                gpu?,
                frames,
                busy,
                health.map_or(0, |h| h.vram_peak),
                health.and_then(|h| h.device_peak),
            ))
        })
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
