//! Running a prepared job on this machine: `jobs` workers (each loads the model once) take
//! the pending segments in order, each settled as it finishes; then the output is assembled
//! from the segments (or, when interrupted, the segments done are assembled into a partial
//! file and the work folder is kept for the resume).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rave_core::error::{EngineError, ErrorFamily, Result};
use rave_core::gpu::HealthSnapshot;
use rave_tensorrt::backend_report::GpuBackendReport;

use super::commit::{commit_segment, mark_running};
use super::finish::{
    OutputJob, done_prefix, job_damage, job_decode_stats, saw_interlaced, write_output,
};
use super::job::PreparedJob;
use super::job_progress::JobProgress;
use super::manifest::{SegmentDecode, SegmentState};
use super::plan::PlannedSegment;
use super::startup::StartupClock;
use super::worker::{BackendInfo, JobSpec, LoadTurn, RunShared, Worker};
use crate::backend_choice::Engine;
use crate::cancel::{CancelToken, StopReason};
use crate::config::{Device, UpscaleConfig};
use crate::gpu_convert::HostCopies;
use crate::gpu_stages;
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::{
    GpuLine, GpuRunReport, ModelReport, RunReport, RunStatus, SegmentsReport, WorkerShare, ratio,
};
use crate::segment_sink::SegmentOutcome;
use crate::stages::{FirstError, PipelineMetrics, guarded};

/// Segments processed at once when `--jobs` is not given: two where a GPU can run the model
/// (inference is faster than one software encoder, so a second segment keeps it busy), one
/// on the CPU (inference already uses every core); never more than there are segments.
/// With several GPUs (`--gpus`), that many on each.
pub fn default_jobs(config: &UpscaleConfig, pending: usize) -> usize {
    let gpu_possible =
        config.device != Device::Cpu && std::path::Path::new("/dev/nvidiactl").exists();
    let wanted = config
        .segments
        .jobs
        .unwrap_or(if gpu_possible { 2 } else { 1 });
    let gpus = if config.device == Device::Cpu {
        1
    } else {
        config.gpu.gpus.len().max(1)
    };
    (wanted * gpus).clamp(1, pending.max(1))
}

/// An interrupted segment's finalized file: index, path, frames, first timestamp.
type PartialSegment = (usize, PathBuf, u64, Option<i64>);

/// What one worker leaves for the report.
struct WorkerReport {
    info: BackendInfo,
    gpu: Option<(GpuBackendReport, HealthSnapshot)>,
    /// The GPU it ran on (None on the CPU), the frames of the segments it finished, and
    /// the seconds it spent on segments.
    share: (Option<usize>, u64, f64),
    /// The NVENC encoder it used, or why it used the software one (`--encoder auto`).
    encoder: (Option<&'static str>, Option<String>),
}

/// Run `job` to its end into `target` (`None` for a null sink); `clock` has the run's start
/// and times the rest of its start-up (`load_model`, `first_frame`).
pub fn run_job(
    job: PreparedJob,
    target: Option<&OutputTarget>,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
    clock: &StartupClock,
) -> Result<RunReport> {
    let PreparedJob {
        spec,
        mut manifest,
        work,
        claim: _claim,
        created_work,
        reused,
        plan_stats,
        mut warnings,
    } = job;
    let jobs = default_jobs(
        &spec.config,
        manifest
            .segments
            .iter()
            .filter(|s| s.state != SegmentState::Done)
            .count(),
    );
    let spec = per_worker(spec, jobs);
    let config = &spec.config;
    let discard = || {
        if let Some(t) = target {
            t.discard();
        }
    };
    let pending: VecDeque<usize> = manifest
        .segments
        .iter()
        .filter(|s| s.state != SegmentState::Done)
        .map(|s| s.plan.index)
        .collect();
    let queue = Mutex::new(pending);
    let frames_total = manifest.frames_total;
    progress.started(Some(frames_total));
    let job_progress =
        JobProgress::new(progress, Some(frames_total), manifest.frames_done(), clock);
    let metrics = PipelineMetrics::default();
    let copies = Arc::new(HostCopies::default());
    let errors = FirstError::default();
    let partials: Mutex<Vec<PartialSegment>> = Mutex::new(Vec::new());
    let null_outcomes: Mutex<Vec<(usize, SegmentDecode)>> = Mutex::new(Vec::new());
    let reports: Mutex<Vec<WorkerReport>> = Mutex::new(Vec::new());
    let warned = std::sync::Once::new();
    // Segments finished by this run (a null sink's are not marked done in a manifest).
    let processed = AtomicUsize::new(0);
    // When the first worker has its model loaded: the stages' clock where no frame was
    // decoded (`pipeline_s` counts from the first frame decoded to the last written).
    let stages_started: OnceLock<Instant> = OnceLock::new();
    let strict = manifest.segments.len() > 1;
    let shared = RunShared {
        progress: &job_progress,
        cancel,
        metrics: &metrics,
        copies: &copies,
    };
    let segments = manifest.segments.clone();
    // The workers load their models one at a time, so that each one's VRAM fit measures
    // its own memory (the device's use is read device-wide); under `--vram-limit` none
    // starts on frames before all have loaded, for the same reason.
    let gpus = if config.device == Device::Cpu {
        vec![config.gpu.device_id]
    } else {
        config.gpu.gpus.clone()
    };
    let slots = crate::gpu_list::assign(&gpus, jobs);
    let next_slot = AtomicUsize::new(0);
    let load_failures: Mutex<Vec<(usize, EngineError)>> = Mutex::new(Vec::new());
    // Per GPU, the workers that have loaded so far.
    let load_turn = Mutex::new(vec![0usize; gpus.len()]);
    let all_loaded = std::sync::Barrier::new(jobs);
    let wait_for_all = config.gpu.vram_limit.is_some() && config.device != Device::Cpu;
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                guarded(&errors, cancel, || {
                    let loading = Instant::now();
                    let my_frames = AtomicU64::new(0);
                    let started = {
                        let mut loaded = load_turn.lock().unwrap_or_else(|e| e.into_inner());
                        let k = next_slot.fetch_add(1, Ordering::Relaxed);
                        let (gpu, sharing) = slots[k % slots.len()];
                        let on_gpu = gpus.iter().position(|&g| g == gpu).unwrap_or(0);
                        let turn = LoadTurn {
                            gpu,
                            sharing,
                            to_start: sharing - loaded[on_gpu],
                        };
                        loaded[on_gpu] += 1;
                        (gpu, Worker::start_in_turn(&spec, cancel, turn))
                    };
                    if wait_for_all {
                        all_loaded.wait();
                    }
                    let (gpu, started) = started;
                    let mut worker = match started {
                        Ok(worker) => worker,
                        // With several GPUs, one whose worker cannot load the model leaves
                        // the segments to the others (a bad option fails them all alike).
                        Err(e) if gpus.len() > 1 && e.family() != ErrorFamily::Usage => {
                            load_failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((gpu, e));
                            return Ok(());
                        }
                        Err(e) => return Err(e),
                    };
                    clock.step("load_model", loading);
                    stages_started.get_or_init(Instant::now);
                    if let Some(w) = &worker.info.warning {
                        warned.call_once(|| progress.warning(w));
                    }
                    let mut next = || -> Result<Option<(PlannedSegment, Option<PathBuf>)>> {
                        if cancel.is_cancelled() {
                            return Ok(None);
                        }
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                        let Some(i) = next else {
                            return Ok(None);
                        };
                        if let Some(w) = &work {
                            mark_running(w, i)?;
                        }
                        let temp = work.as_ref().map(|w| w.segment_temp(i));
                        Ok(Some((segments[i].plan.clone(), temp)))
                    };
                    let settle = |o: SegmentOutcome| -> Result<()> {
                        if o.complete {
                            my_frames.fetch_add(o.frames, Ordering::Relaxed);
                        }
                        let i = o.index;
                        match (&work, &o.file) {
                            (Some(w), Some(t)) if o.complete => {
                                commit_segment(w, &segments[i].plan, t, &o, strict)?;
                                processed.fetch_add(1, Ordering::Relaxed);
                            }
                            (None, _) if o.complete => {
                                null_outcomes
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push((i, o.decode));
                                processed.fetch_add(1, Ordering::Relaxed);
                            }
                            (Some(w), Some(t))
                                if o.finalized
                                    && o.frames > 0
                                    && cancel.reason() == Some(StopReason::User) =>
                            {
                                let kept = w.segment_partial(i);
                                std::fs::rename(t, &kept)?;
                                partials.lock().unwrap_or_else(|e| e.into_inner()).push((
                                    i,
                                    kept,
                                    o.frames,
                                    o.first_pts,
                                ));
                            }
                            (_, Some(t)) => {
                                let _ = std::fs::remove_file(t);
                            }
                            _ => {}
                        }
                        Ok(())
                    };
                    let busy = Instant::now();
                    let result = worker.run_segments(&spec, &mut next, &settle, &shared);
                    let busy = busy.elapsed().as_secs_f64();
                    worker.shutdown();
                    let (gpu, on) = match worker.engine() {
                        Engine::Gpu(g) => (
                            Some((g.backend.counters(), g.ctx.health())),
                            Some(worker.gpu_index),
                        ),
                        Engine::Cpu(_) => (None, None),
                    };
                    let encoder = (worker.nvenc_encoder(), worker.software_reason.clone());
                    reports
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(WorkerReport {
                            info: worker.info,
                            gpu,
                            encoder,
                            share: (on, my_frames.load(Ordering::Relaxed), busy),
                        });
                    result
                });
            });
        }
    });
    progress.finished();
    // From the first frame decoded to the last written (the encoder's flush included);
    // without frames, from the model's load to now.
    let pipeline_s = match (
        metrics.decode.first_recorded(),
        metrics.encode.last_recorded(),
    ) {
        (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
        _ => stages_started
            .get()
            .map_or(0.0, |t| t.elapsed().as_secs_f64()),
    };
    let written = job_progress.written();
    let keep_or_remove_work = |nothing_done: bool| {
        if let Some(w) = &work
            && created_work
            && nothing_done
        {
            let _ = w.remove();
        }
    };
    if let Some(w) = &work {
        manifest = w.read()?;
    }
    for (i, decode) in null_outcomes.into_inner().unwrap_or_default() {
        manifest.segments[i].decode = Some(decode);
    }
    let nothing_done = manifest.frames_done() == 0;
    // Stopped by the user before any frame reached an encoder: keep nothing.
    if cancel.reason() == Some(StopReason::User) && written == 0 && reused == 0 {
        discard();
        keep_or_remove_work(nothing_done);
        return Err(EngineError::CancelledBeforeOutput);
    }
    let load_failures = load_failures.into_inner().unwrap_or_default();
    let left = queue.lock().unwrap_or_else(|e| e.into_inner()).len();
    let first_error = errors.take();
    if let Some((gpu, e)) = load_failures.first()
        && left > 0
        && first_error.is_none()
        && cancel.reason().is_none()
    {
        // No GPU's worker was left to run the rest.
        discard();
        keep_or_remove_work(nothing_done);
        return Err(EngineError::Cuda(format!(
            "GPU {gpu}: the model did not load ({e}); {left} segment(s) were not run, and no other GPU's worker was left for them"
        )));
    }
    for (gpu, e) in &load_failures {
        let w = format!(
            "GPU {gpu}: a segment worker did not load the model ({e}); the other GPUs ran its segments"
        );
        progress.warning(&w);
        warnings.push(w);
    }
    if let Some(err) = first_error {
        discard();
        keep_or_remove_work(nothing_done);
        return Err(err);
    }
    let status = match cancel.reason() {
        Some(StopReason::User) => RunStatus::Partial,
        Some(_) => {
            discard();
            return Err(EngineError::Cancelled);
        }
        None => RunStatus::Complete,
    };
    let reports = reports.into_inner().unwrap_or_default();
    let Some(first) = reports.first() else {
        return Err(EngineError::InvariantViolation("no worker started".into()));
    };
    let mut damage = job_damage(&manifest);
    let mut decode = job_decode_stats(&manifest, &plan_stats);
    let mut mux = rave_ffmpeg::WriterSummary::default();
    let mut frames_out = written;
    let output = match (target, &work) {
        (Some(target), Some(w)) => {
            let (mut files, mut frames) = done_prefix(&manifest, w);
            let partial = status == RunStatus::Partial;
            if partial {
                let next = files.len();
                if let Some((_, path, n, first)) = partials
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .find(|(i, ..)| *i == next)
                {
                    files.push((path.clone(), *first));
                    frames += n;
                }
            }
            let written = write_output(
                OutputJob {
                    manifest: &manifest,
                    work: w,
                    config,
                    container: spec.container,
                    files,
                    frames,
                    partial,
                },
                target,
                &mut damage,
                cancel,
            )?;
            decode.copied_packets = written.copied_packets;
            mux = written.summary;
            frames_out = frames;
            written.path
        }
        _ => PathBuf::from("(null sink)"),
    };
    let work_kept = match &work {
        Some(w) if status == RunStatus::Complete && !config.segments.keep_work => {
            w.remove().map(|_| false).unwrap_or(true)
        }
        Some(_) => true,
        None => false,
    };
    if let Some(w) = &work
        && work_kept
        && status == RunStatus::Partial
    {
        let warning = format!(
            "the work folder {} keeps the {} finished segment(s); run the same command again to resume",
            w.path().display(),
            manifest.segments.len() - manifest.missing().len()
        );
        progress.warning(&warning);
        warnings.push(warning);
    }
    if saw_interlaced(&manifest) && !mux.warnings.iter().any(|w| w.contains("interlaced")) {
        let w = rave_ffmpeg::carried_metadata::interlace_warning("seen in its frames");
        progress.warning(&w);
        warnings.push(w);
    }
    if let Some(at) = decode.timestamp_resets.first() {
        let w = format!(
            "the input's timestamps restart {} time(s), first at {at:.3} s (a joined or spliced stream); the timeline was continued across them, every frame and packet kept",
            decode.timestamp_resets.len()
        );
        progress.warning(&w);
        warnings.push(w);
    }
    mux.warnings.extend(warnings);
    // The assembly copies the segments' packets: it names the codec's software encoder.
    if let (Some(nvenc), _) = first.encoder {
        mux.encoder = nvenc.into();
    }
    let elapsed = clock.started().elapsed().as_secs_f64();
    let (w, h) = spec.in_size;
    let meta = first.info.metadata.clone();
    let gpu = first.gpu.clone().map(|(backend, health)| GpuRunReport {
        backend,
        decoder: gpu_stages::describe_decoder(&decode, config.gpu.nvdec),
        encoder: match (config.null_output, &first.encoder) {
            (true, _) => "none (null sink)".into(),
            (false, (Some(nvenc), _)) => format!(
                "{nvenc} (NVENC) from CUDA surfaces the postprocess kernel writes: no host copy"
            ),
            (false, (None, Some(why))) => format!(
                "{} (software) from one page-locked device-to-host copy per frame; {why}",
                config.encoder.codec.encoder_name()
            ),
            (false, (None, None)) => gpu_stages::describe_encoder(config.encoder.codec),
        },
        host_copies: copies.report(metrics.encode.frames()),
        health,
    });
    Ok(RunReport {
        status,
        input: config.input.clone(),
        output,
        model: ModelReport {
            metadata: meta.clone(),
            path: first.info.model.clone(),
        },
        backend: first.info.report.clone(),
        tiling: first.info.tiling.clone(),
        encoder: config.encoder.clone(),
        input_size: [w, h],
        output_size: [w * meta.scale, h * meta.scale],
        frames_in: decode.frames,
        frames_out,
        elapsed_s: elapsed,
        fps: ratio(written as f64, elapsed),
        pipeline_s,
        pipeline_fps: ratio(written as f64, pipeline_s),
        first_frame_s: clock.first_frame_s(),
        startup: clock.steps(),
        stages: metrics.snapshots(),
        decode,
        input_damage: damage,
        mux,
        gpu,
        gpus: GpuLine::per_gpu(&worker_shares(&reports)),
        segments: SegmentsReport {
            total: manifest.segments.len(),
            processed: processed.into_inner(),
            reused,
            jobs,
            segment_frames: manifest.segment_frames,
            single_reason: manifest.single_reason.clone(),
            work: work.as_ref().map(|w| w.path().to_path_buf()),
            work_kept,
        },
    })
}

/// What each GPU worker of `reports` did (none on the CPU).
fn worker_shares(reports: &[WorkerReport]) -> Vec<WorkerShare> {
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

/// The spec each of `jobs` workers runs with: the CPU's inference threads shared out
/// between them unless `--threads` says otherwise, and with several GPUs the software
/// encoders' threads too.
fn per_worker(mut spec: JobSpec, jobs: usize) -> JobSpec {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if jobs > 1 && spec.config.threads == 0 {
        spec.config.threads = (cores / jobs).max(1);
    }
    let gpus = match spec.config.device {
        Device::Cpu => 1,
        _ => spec.config.gpu.gpus.len(),
    };
    if spec.config.encoder.threads.is_none() {
        spec.config.encoder.threads = encoder_threads(cores, jobs, gpus);
    }
    spec
}

/// Threads each of `workers` software encoders gets on `cores`, where they are spread over
/// `gpus` GPUs: with several GPUs, the cores shared out (each encoder would otherwise size
/// its pool from all of them, and the GPUs' workers would fight over the CPU); with one,
/// the encoders' own choice, as measured on one GPU.
fn encoder_threads(cores: usize, workers: usize, gpus: usize) -> Option<usize> {
    (gpus > 1 && workers > 1).then(|| (cores / workers).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoders_share_the_cores_only_across_several_gpus() {
        assert_eq!(encoder_threads(32, 4, 2), Some(8));
        assert_eq!(encoder_threads(16, 2, 1), None, "one GPU: as before");
        assert_eq!(encoder_threads(4, 8, 2), Some(1));
        assert_eq!(encoder_threads(32, 1, 2), None, "one worker");
    }
}
