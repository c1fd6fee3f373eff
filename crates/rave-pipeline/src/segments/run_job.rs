//! Running a prepared job on this machine: `jobs` workers (each loads the model once) take
//! the pending segments in order, each settled as it finishes; then the output is assembled
//! from the segments (or, when interrupted, the segments done are assembled into a partial
//! file and the work folder is kept for the resume).

use std::path::PathBuf;
use std::sync::Arc;

use rave_core::error::{EngineError, ErrorFamily, Result};

use super::commit::FrameCheck;
use super::done_segments::verify_done_naming;
use super::failures;
use super::finish::{
    OutputJob, damage_of, decode_stats_of, done_prefix, held_decodes, job_damage, job_decode_stats,
    saw_interlaced, step_back_warning, write_output,
};
use super::job::PreparedJob;
use super::job_progress::JobProgress;
use super::job_work::{JobResults, JobWork, LocalJob, worker_shares};
use super::manifest::{Manifest, SegmentState};
use super::paths::absolute;
use super::pool::{PoolPlan, run_pool};
use super::queue::SegmentQueue;
use super::startup::StartupClock;
use super::worker_count::{default_jobs, per_worker, planned_workers};
use crate::cancel::{CancelToken, StopReason};
use crate::config::Device;
use crate::gpu_convert::HostCopies;
use crate::gpu_stages;
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::{
    GpuLine, GpuRunReport, ModelReport, RunReport, RunStatus, SegmentsReport, ratio,
};
use crate::stages::PipelineMetrics;

/// Whether `e` refuses an input of which no video frame decodes (`--allow-corrupt` cannot
/// help: nothing a rerun could assemble).
fn no_decodable_video(e: &EngineError) -> bool {
    matches!(e, EngineError::CorruptStream { damage, .. } if damage.no_decodable_video())
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
        claim,
        created_work,
        reused,
        plan_stats,
        mut warnings,
    } = job;
    let pending: Vec<usize> = manifest
        .segments
        .iter()
        .filter(|s| s.state != SegmentState::Done)
        .map(|s| s.plan.index)
        .collect();
    let jobs = default_jobs(&spec.config, pending.len());
    let planned = planned_workers(&spec.config);
    let spec = per_worker(spec, jobs, planned);
    let config = &spec.config;
    let discard = || {
        if let Some(t) = target {
            t.discard();
        }
    };
    let frames_total = manifest.frames_total;
    progress.started(Some(frames_total));
    let job_progress =
        JobProgress::new(progress, Some(frames_total), manifest.frames_done(), clock);
    let metrics = PipelineMetrics::default();
    let copies = Arc::new(HostCopies::default());
    let gpus = if config.device == Device::Cpu {
        vec![config.gpu.device_id]
    } else {
        config.gpu.gpus.clone()
    };
    // A GPU's workers load their models one at a time (the GPUs side by side), so that
    // each one's VRAM fit measures its own memory (the device's use is read device-wide); under `--vram-limit` none
    // starts on frames before all have loaded, for the same reason. With several GPUs, a
    // GPU that fails leaves its segments to the others.
    let plan = PoolPlan {
        survive_gpu_failures: gpus.len() > 1,
        wait_for_all_loaded: config.gpu.vram_limit.is_some() && config.device != Device::Cpu,
        gpus,
        jobs,
    };
    let local = LocalJob {
        job: JobWork {
            spec: &spec,
            work: work.as_ref(),
            segments: &manifest.segments,
            job_id: &manifest.job_id,
            check: FrameCheck::for_plan(manifest.segments.len(), config.allow_corrupt),
            progress: &job_progress,
            cancel,
            clock,
            metrics: &metrics,
            copies: &copies,
        },
        results: JobResults::default(),
    };
    let outcome = run_pool(&plan, SegmentQueue::new(pending, jobs), cancel, &local);
    let results = local.results;
    progress.finished();
    // From the first frame decoded to the last written (the encoder's flush included);
    // without frames, from the model's load to now.
    let pipeline_s = match (
        metrics.decode.first_recorded(),
        metrics.encode.last_recorded(),
    ) {
        (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
        _ => results
            .stages_started
            .get()
            .map_or(0.0, |t| t.elapsed().as_secs_f64()),
    };
    let written = job_progress.written();
    let keep_or_remove_work = |nothing_done: bool| {
        if let Some(w) = &work
            && ((created_work && nothing_done) || config.segments.scratch)
        {
            let _ = w.remove(claim.as_ref());
        }
    };
    // The finished segments' files are checked before they are joined (removed or
    // changed on disk during the run: they are redone by the next run).
    let mut not_intact = Vec::new();
    if let Some(w) = &work {
        if !w.has_manifest() {
            discard();
            return Err(EngineError::OutputUnwritable {
                path: w.path().to_path_buf(),
                reason: "work folder: removed during the run, with the segments it held; run the same command again to upscale them anew".into(),
            });
        }
        (manifest, not_intact) = verify_done_naming(w)?;
    }
    for (i, decode) in results.null_outcomes.into_inner().unwrap_or_default() {
        manifest.segments[i].decode = Some(decode);
    }
    let nothing_done = manifest.frames_done() == 0;
    let done = manifest.segments.len() - manifest.missing().len();
    // The input replaced or rewritten while its segments were read: they may hold frames
    // of two files (and its errors are not the file's damage).
    if let Some(changed) = input_changed(&manifest, &config.input) {
        discard();
        keep_or_remove_work(nothing_done);
        return Err(changed);
    }
    // Stopped by the user before any frame reached an encoder: keep nothing.
    if cancel.reason() == Some(StopReason::User) && written == 0 && reused == 0 {
        discard();
        keep_or_remove_work(nothing_done);
        return Err(EngineError::CancelledBeforeOutput);
    }
    if let Some(err) = outcome.error {
        discard();
        // A segment whose damage changed its frames fails the same way on every run of
        // this plan, --allow-corrupt or not: its segments are no work to resume (the advice
        // is to read the input as one segment, another plan).
        // Whichever run made the work folder: the next run's plan is another.
        let damaged = super::commit::cannot_be_cut(&err);
        match (&work, damaged && !config.segments.keep_work) {
            (Some(w), true) => {
                let _ = w.remove(claim.as_ref());
            }
            _ => keep_or_remove_work(nothing_done),
        }
        if let Some(w) = &work
            && let Some(rerun) = config.segments.resume_advice()
            && done > 0
            && err.family() != ErrorFamily::Usage
            && !damaged
        {
            progress.warning(&format!(
                "the work folder {} keeps the {done} segment(s) finished before the error; once it is dealt with, {rerun} to resume",
                w.path().display(),
            ));
        }
        return Err(err);
    }
    if cancel.reason().is_none() && !outcome.segments.left.is_empty() {
        // Segments failed on the GPUs, or no worker was left that could run them.
        discard();
        keep_or_remove_work(nothing_done);
        let advice = config.segments.resume_advice();
        let kept = work
            .as_ref()
            .filter(|_| done > 0 && advice.is_some())
            .map(|w| (w.path(), done));
        return Err(failures::missing_segments(
            &outcome,
            manifest.segments.len(),
            kept,
            advice.unwrap_or("run the same command again"),
        ));
    }
    for w in failures::survived(&outcome) {
        progress.warning(&w);
        warnings.push(w);
    }
    let status = match cancel.reason() {
        Some(StopReason::User) => RunStatus::Partial,
        Some(_) => {
            discard();
            return Err(EngineError::Cancelled);
        }
        None => RunStatus::Complete,
    };
    if let (Some(w), false, RunStatus::Complete) = (&work, not_intact.is_empty(), status) {
        discard();
        return Err(EngineError::OutputUnwritable {
            path: w.path().to_path_buf(),
            reason: format!(
                "work folder: {} changed or went after being written (its checksum no longer matches: damaged on disk, or touched by another program); the same command again redoes it and keeps the other finished segments",
                not_intact.join(", ")
            ),
        });
    }
    let reports = results.reports.into_inner().unwrap_or_default();
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
                let partials = results.partials.lock().unwrap_or_else(|e| e.into_inner());
                let interrupted = partials.iter().find(|p| p.index == next);
                if let Some(p) = interrupted {
                    files.push((p.path.clone(), p.first_pts));
                    frames += p.frames;
                }
                // The frames decoded, and their damage, are those the partial file holds.
                let held = || held_decodes(&manifest, next, interrupted.map(|p| &p.decode));
                decode = decode_stats_of(held(), &plan_stats);
                damage = damage_of(&manifest, held());
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
            )
            .inspect_err(|e| {
                // The finished file is in place under another name: nothing to resume.
                if target.kept_elsewhere().is_some() && !config.segments.keep_work {
                    let _ = w.remove(claim.as_ref());
                } else if no_decodable_video(e) && !config.segments.keep_work {
                    // No frame decodes (its segments are "finished" with none): no run can
                    // put anything together, whichever run made the work folder.
                    let _ = w.remove(claim.as_ref());
                } else if nothing_done {
                    // No frame was decoded (an input refused as damaged): another run has
                    // nothing to put together, so there is nothing to keep or resume.
                    keep_or_remove_work(true);
                } else if let Some(rerun) = config.segments.resume_advice()
                    && partial
                    && e.family() != ErrorFamily::Cancelled
                {
                    // The interrupted run's partial output could not be written: the
                    // finished segments are kept, the rest is upscaled by the next run.
                    progress.warning(&format!(
                        "the partial output could not be written; the work folder {} keeps {done} of the {} segment(s), finished before the interruption: {rerun} to upscale the rest",
                        w.path().display(),
                        manifest.segments.len(),
                    ));
                } else if let Some(rerun) = config.segments.resume_advice()
                    && e.family() != ErrorFamily::Cancelled
                {
                    // Every segment is done: the input was refused as damaged when the
                    // whole of it was known (which --allow-corrupt accepts), or writing the
                    // output failed (a full disk, say).
                    let how = match e {
                        EngineError::CorruptStream { .. } => format!("add --allow-corrupt and {rerun}"),
                        _ if e.family() == ErrorFamily::Input => format!("once the input is dealt with, {rerun}"),
                        _ => format!("once the output can be written, {rerun}"),
                    };
                    progress.warning(&format!(
                        "the work folder {} keeps the {done} finished segment(s); {how} to put them together without upscaling again",
                        w.path().display(),
                    ));
                }
            })?;
            decode.copied_packets = written.copied_packets;
            mux = written.summary;
            // What the muxer found it could not keep (a language QuickTime cannot name,
            // chapters before the picture, cues shortened), said like the rest, once.
            for w in &mux.warnings {
                progress.warning(w);
            }
            frames_out = frames;
            written.path
        }
        _ => PathBuf::from("(null sink)"),
    };
    // A partial an interrupted run of this job kept is superseded: said, not deleted.
    if let (RunStatus::Complete, Some(target)) = (status, target) {
        let kept = manifest.partial_outputs.iter();
        for old in kept.filter(|p| target.is_leftover(p)) {
            // Named as the target is spelled (the run that kept it may have spelled it
            // otherwise).
            let old = old
                .file_name()
                .map_or(old.clone(), |n| target.target().with_file_name(n));
            let w = format!(
                "{} is the partial output of an earlier, interrupted run: {} now holds every frame, so it can be deleted",
                old.display(),
                output.display()
            );
            progress.warning(&w);
            warnings.push(w);
        }
    }
    // Said while the run ends (a `warning` event with --progress jsonl), as well as in the
    // report's input_damage and the summary.
    if !damage.is_clean() {
        let kept = match config.allow_corrupt {
            true => " (kept with --allow-corrupt)",
            false => "",
        };
        progress.warning(&format!("damaged input{kept}: {}", damage.describe()));
    }
    for w in [
        damage.leading_warning(),
        damage.part_leading_warning(),
        damage.gap_warning(),
        damage.audio_gap_warning(),
    ]
    .into_iter()
    .flatten()
    {
        progress.warning(&w);
        warnings.push(w);
    }
    let work_kept = match &work {
        // Stopped with no segment finished: nothing to resume from a folder this run made.
        Some(w)
            if (status == RunStatus::Complete && !config.segments.keep_work)
                || config.segments.scratch
                || (status == RunStatus::Partial
                    && done == 0
                    && created_work
                    && !config.segments.keep_work) =>
        {
            w.remove(claim.as_ref()).map(|_| false).unwrap_or(true)
        }
        Some(_) => true,
        None => false,
    };
    // The partial is this job's: the run that completes it will say it is superseded.
    if let Some(w) = &work
        && work_kept
        && status == RunStatus::Partial
        && let Ok(mut locked) = w.lock()
    {
        let kept = absolute(&output);
        if !locked.manifest.partial_outputs.contains(&kept) {
            locked.manifest.partial_outputs.push(kept);
        }
        if let Err(e) = locked.save() {
            tracing::debug!("the partial output was not recorded in the manifest: {e}");
        }
    }
    if let Some(w) = &work
        && let Some(rerun) = config.segments.resume_advice()
        && work_kept
        && status == RunStatus::Partial
    {
        let warning = format!(
            "the work folder {} keeps the {done} finished segment(s); {rerun} to resume",
            w.path().display(),
        );
        progress.warning(&warning);
        warnings.push(warning);
    }
    let nvenc = first.encoder.0.is_some();
    let encoded = (!config.null_output).then_some((config.encoder.codec, nvenc));
    if let Some(w) = rave_ffmpeg::captions::lost(decode.captioned_frames, encoded) {
        progress.warning(&w);
        warnings.push(w);
    }
    if let Some((codec, nvenc)) = encoded
        && let Some(w) =
            rave_ffmpeg::codec_choice::high10_note(codec, nvenc, manifest.settings.bit_depth)
    {
        // Said as the first worker loaded where one did (every segment reused: not yet).
        if results.high10_said.get().is_none() {
            progress.warning(&w);
        }
        warnings.push(w);
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
    if let Some(w) = step_back_warning(&decode.timestamp_steps) {
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
            (false, (None, None)) => {
                let gpu = config.gpu.gpus.first().copied();
                gpu_stages::describe_encoder(
                    config.encoder.codec,
                    gpu.unwrap_or(config.gpu.device_id),
                )
            }
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
        frames_upscaled: written,
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
        gpus: failures::mark_failed_gpus(GpuLine::per_gpu(&worker_shares(&reports)), &outcome),
        segments: SegmentsReport {
            total: manifest.segments.len(),
            processed: results.processed.into_inner(),
            retried: failures::retried(&outcome.segments),
            reused,
            jobs,
            segment_frames: manifest.segment_frames,
            single_reason: manifest.single_reason.clone(),
            work: work.as_ref().map(|w| w.path().to_path_buf()),
            work_kept,
        },
    })
}

/// The error for an input that is no longer the file the job planned (`manifest`'s
/// fingerprint): replaced, rewritten, or gone during the run.
fn input_changed(manifest: &Manifest, input: &std::path::Path) -> Option<EngineError> {
    let now = super::fingerprint::InputFingerprint::of(input).ok();
    (now.as_ref() != Some(&manifest.fingerprint)).then(|| EngineError::InputUnreadable {
        path: input.to_path_buf(),
        reason: "changed during the run (replaced, rewritten or removed: its size, modification time or content are not those the job was planned with); what was upscaled may mix two versions of it, so no output is written; once it stays put, run again with --restart".into(),
    })
}
