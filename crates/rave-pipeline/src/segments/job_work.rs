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

use super::commit::{FrameCheck, commit_segment, mark_running, mark_unfinished};
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

/// An interrupted segment's finalized file.
pub struct PartialSegment {
    /// The segment.
    pub index: usize,
    /// Its file in the work folder.
    pub path: PathBuf,
    /// The frames it holds.
    pub frames: u64,
    /// Its first timestamp.
    pub first_pts: Option<i64>,
    /// What decoding it saw, counting the frames its file holds.
    pub decode: SegmentDecode,
}

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
    /// The plan's name (`Manifest::job_id`).
    pub job_id: &'a str,
    /// How each segment's frames are held against its plan.
    pub check: FrameCheck,
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
    /// The High 10 note was given as the first worker loaded (before the work, where a
    /// user can still stop and choose another codec), so the end of the run does not
    /// repeat it.
    pub high10_said: OnceLock<()>,
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
    /// Settle segment `o` of a worker holding `lease` and stopped by `cancel`: a complete file is committed (or a
    /// null sink's outcome kept), a file interrupted by the user kept as a partial one,
    /// any other removed; the frames of a segment that failed no longer count as written.
    fn settle(
        &self,
        o: SegmentOutcome,
        lease: &Lease<'_>,
        frames: &AtomicU64,
        cancel: &CancelToken,
    ) -> Result<()> {
        let job = &self.job;
        let i = o.index;
        // The worker's own reason, as its finisher saw it: a worker that failed before a
        // Ctrl+C did not finalize its segment as a partial one.
        let user_stop = cancel.reason() == Some(StopReason::User);
        match (job.work, &o.file) {
            (Some(w), Some(t)) if o.complete => {
                let segment = (job.spec.config.input.as_path(), &job.segments[i].plan);
                commit_segment((w, job.job_id), segment, t, &o, job.check)?;
                self.results.processed.fetch_add(1, Ordering::Relaxed);
            }
            (None, _) if o.complete => {
                lock(&self.results.null_outcomes).push((i, o.decode.clone()));
                self.results.processed.fetch_add(1, Ordering::Relaxed);
            }
            // A null sink's frames stopped by the user count as written: so do their decodes.
            (None, _) if o.frames > 0 && user_stop => {
                let decode = written_part(&o);
                lock(&self.results.null_outcomes).push((i, decode));
            }
            (Some(w), Some(t)) if o.finalized && o.frames > 0 && user_stop => {
                let kept = w.segment_partial(i);
                std::fs::rename(t, &kept)?;
                lock(&self.results.partials).push(PartialSegment {
                    index: i,
                    path: kept,
                    frames: o.frames,
                    first_pts: o.first_pts,
                    decode: written_part(&o),
                });
            }
            (_, Some(t)) => {
                let _ = std::fs::remove_file(t);
            }
            _ => {}
        }
        if o.complete {
            frames.fetch_add(o.frames, Ordering::Relaxed);
            lease.finished(i);
            return Ok(());
        }
        if !user_stop {
            job.progress.rewind(o.frames);
        }
        if let Some(w) = job.work {
            // Bookkeeping for `rave status` only: the run's own outcome stands either way.
            mark_unfinished(w, i).ok();
        }
        Ok(())
    }
}

/// What decoding an interrupted segment saw, counting the frames it wrote: frames decoded
/// but still in flight when the run stopped were never upscaled.
fn written_part(o: &SegmentOutcome) -> SegmentDecode {
    SegmentDecode {
        frames: o.frames,
        nvdec_frames: o.decode.nvdec_frames.min(o.frames),
        ..o.decode.clone()
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
        let config = &self.job.spec.config;
        let nvenc = worker.nvenc_encoder().is_some();
        if !config.null_output
            && let Some(note) = rave_ffmpeg::codec_choice::high10_note(
                config.encoder.codec,
                nvenc,
                self.job.spec.bit_depth,
            )
        {
            self.results
                .high10_said
                .get_or_init(|| self.job.progress.warning(&note));
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
        let settle = |o: SegmentOutcome| self.settle(o, lease, frames, cancel);
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

    fn device_failed(&self, r: &Running) -> bool {
        match r.worker.engine() {
            // A context left in error (a sticky CUDA error) fails every call from now on.
            Engine::Gpu(g) => g.ctx.sync_all().is_err(),
            Engine::Cpu(_) => false,
        }
    }

    fn end(&self, r: Running) {
        let Running {
            worker,
            frames,
            busy,
        } = r;
        worker.shutdown();
        let gpu = match worker.engine() {
            Engine::Gpu(g) => Some((g.backend.counters(), g.ctx.health())),
            Engine::Cpu(_) => None,
        };
        let on = worker.on_gpu();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SegmentOptions, UpscaleConfig};
    use crate::progress::{NoProgress, Progress};
    use crate::segments::job::{PreparedJob, prepare};
    use crate::segments::manifest::SegmentState;
    use crate::segments::queue::SegmentQueue;
    use rave_core::damage::InputDamage;
    use rave_ffmpeg::DecodeStats;

    /// A job of two 10-frame segments of a clip made by the ffmpeg command, planned for
    /// real (no model is loaded: `settle` is what is tested).
    fn two_segment_job(dir: &std::path::Path) -> PreparedJob {
        let input = dir.join("in.mp4");
        let made = std::process::Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
            .arg("testsrc2=size=64x48:rate=25:duration=0.8")
            .args([
                "-c:v",
                "libx264",
                "-g",
                "10",
                "-keyint_min",
                "10",
                "-sc_threshold",
                "0",
            ])
            .arg(&input)
            .status()
            .expect("the ffmpeg command (scripts/setup.sh installs it)");
        assert!(made.success());
        let model = dir.join("model.onnx");
        std::fs::write(&model, b"not loaded by this test").unwrap();
        let config = UpscaleConfig {
            threads: 1,
            segments: SegmentOptions {
                segment_frames: Some(10),
                ..SegmentOptions::default()
            },
            ..UpscaleConfig::for_test(input, dir.join("out.mp4"), model)
        };
        let clock = StartupClock::new(Instant::now());
        let job = prepare(
            &config,
            &NoProgress,
            &CancelToken::new(),
            &mut |_| Ok(()),
            &clock,
        )
        .unwrap();
        assert_eq!(job.manifest.segments.len(), 2);
        job
    }

    fn outcome(
        index: usize,
        file: &std::path::Path,
        frames: u64,
        complete: bool,
    ) -> SegmentOutcome {
        SegmentOutcome {
            index,
            file: Some(file.to_path_buf()),
            complete,
            finalized: complete,
            frames,
            decode: SegmentDecode::default(),
            damage: InputDamage::default(),
            stats: DecodeStats::default(),
            first_pts: Some(0),
        }
    }

    #[test]
    fn a_finished_segment_leaves_the_workers_hands_and_a_failed_one_is_not_counted() {
        let dir = tempfile::tempdir().unwrap();
        let job = two_segment_job(dir.path());
        let work = job.work.as_ref().unwrap();
        let clock = StartupClock::new(Instant::now());
        let progress = JobProgress::new(&NoProgress, Some(20), 0, &clock);
        let (metrics, copies) = (PipelineMetrics::default(), Arc::new(HostCopies::default()));
        let job_cancel = CancelToken::new();
        let local = LocalJob {
            job: JobWork {
                spec: &job.spec,
                work: Some(work),
                segments: &job.manifest.segments,
                job_id: &job.manifest.job_id,
                check: FrameCheck::Segments,
                progress: &progress,
                cancel: &job_cancel,
                clock: &clock,
                metrics: &metrics,
                copies: &copies,
            },
            results: JobResults::default(),
        };
        let queue = SegmentQueue::new(0..2, 1);
        let lease = queue.lease(1);
        let frames = AtomicU64::new(0);
        let worker = job_cancel.child();
        assert_eq!((lease.take(), lease.take()), (Some(0), Some(1)));
        mark_running(work, 1).unwrap();
        for _ in 0..14 {
            progress.frame_written(&Progress::new(0, None, Duration::ZERO));
        }
        // Segment 0 is complete: committed, done in the manifest, out of the lease.
        let first = work.segment_temp(0);
        std::fs::write(&first, b"segment 0").unwrap();
        local
            .settle(outcome(0, &first, 10, true), &lease, &frames, &worker)
            .unwrap();
        assert!(!first.exists(), "renamed into place");
        assert_eq!(work.read().unwrap().segments[0].state, SegmentState::Done);
        // The worker's GPU fails 4 frames into segment 1: its file goes, its frames no
        // longer count, and it stays in the lease to be given back.
        worker.cancel(StopReason::Failure);
        let second = work.segment_temp(1);
        std::fs::write(&second, b"half of segment 1").unwrap();
        local
            .settle(outcome(1, &second, 4, false), &lease, &frames, &worker)
            .unwrap();
        assert!(!second.exists(), "an incomplete file is removed");
        assert_eq!(
            progress.written(),
            10,
            "the failed segment's 4 frames rewound"
        );
        assert_eq!(frames.load(Ordering::Relaxed), 10);
        assert_eq!(local.results.processed.load(Ordering::Relaxed), 1);
        let back = lease.give_back("CUDA error").unwrap();
        assert_eq!(
            (back.failed, back.others),
            (1, vec![]),
            "segment 0 was finished"
        );
        drop(lease);
        assert!(queue.outcome().rerun.is_empty());
        assert_eq!(
            work.read().unwrap().segments[1].state,
            SegmentState::Pending,
            "not shown running for a worker that stopped"
        );
    }

    /// A partial output's report counts what the file holds: the segments before the
    /// interrupted one and the frames the interrupted one wrote, not a segment finished
    /// beyond it (which the file does not hold).
    #[test]
    fn a_partial_outputs_counts_are_those_of_the_segments_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = two_segment_job(dir.path()).manifest;
        let decoded = |frames, damaged| SegmentDecode {
            frames,
            frames_damaged: damaged,
            ..SegmentDecode::default()
        };
        // Segment 1 finished, segment 0 was interrupted after 4 of its 10 frames.
        manifest.segments[1].decode = Some(decoded(10, 2));
        let mut o = outcome(0, dir.path(), 4, false);
        o.decode = decoded(7, 1);
        let partial = written_part(&o);
        assert_eq!(partial.frames, 4, "the frames in flight are not counted");
        use crate::segments::finish::{damage_of, decode_stats_of, held_decodes};
        let plan = DecodeStats::default();
        let held = held_decodes(&manifest, 0, Some(&partial));
        assert_eq!(decode_stats_of(held, &plan).frames, 4);
        let damage = damage_of(&manifest, held_decodes(&manifest, 0, Some(&partial)));
        assert_eq!((damage.frames_decoded, damage.frames_damaged), (4, 1));
        // With segment 0 done and segment 1 interrupted, both count.
        manifest.segments[0].decode = Some(decoded(10, 0));
        let held = held_decodes(&manifest, 1, Some(&partial));
        assert_eq!(decode_stats_of(held, &plan).frames, 14);
    }
}
