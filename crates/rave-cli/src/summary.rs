//! Human-readable summaries of a run, a batch, a benchmark and a probe, printed on stdout.

use rave_core::error::ErrorFamily;
use rave_ffmpeg::MediaInfo;
use rave_pipeline::RunReport;
use rave_pipeline::benchmark::BenchmarkReport;
use rave_pipeline::report::RunStatus;

use crate::batch::{BatchReport, InputResult, InputStatus, LeftOutReason};
use crate::console::{self, outln};
use crate::failure;

/// After `rave upscale`.
pub fn print_run(r: &RunReport) {
    let what = match r.status {
        RunStatus::Complete => "upscaled",
        RunStatus::Partial => "interrupted; partial output",
    };
    outln!(
        "{what}: {} -> {}\n  {} frames in, {} out, {}x{} -> {}x{} with {} (x{}) on {}\n  {} crf {} preset {}; {:.1} s, {:.2} fps{}",
        console::shown(&r.input),
        console::shown(&r.output),
        r.frames_in,
        r.frames_out,
        r.input_size[0],
        r.input_size[1],
        r.output_size[0],
        r.output_size[1],
        r.model.metadata.name,
        r.model.metadata.scale,
        r.backend.name,
        r.mux.encoder,
        r.encoder.crf,
        r.encoder.preset,
        r.elapsed_s,
        r.fps,
        reuse_note(r.frames_upscaled, r.frames_out),
    );
    if let Some(first) = r.first_frame_s {
        outln!("  {}", first_frame_line(first, &r.startup));
    }
    if r.mux.copied_streams.len() + r.mux.skipped_streams.len() > 0 {
        outln!(
            "  copied {} stream(s) untouched ({} packets)",
            r.mux.copied_streams.len(),
            r.mux.copied_packets
        );
    }
    for s in &r.mux.skipped_streams {
        outln!("  skipped {s}");
    }
    for w in &r.mux.warnings {
        outln!("  warning: {w}");
    }
    print_segments(&r.segments);
    outln!("  backend: {}", r.backend.reason);
    outln!("  tiling: {}", r.tiling.describe());
    if let Some(gpu) = &r.gpu {
        print_gpu(gpu);
    }
    // One GPU's line would repeat the run's: only with several (`--gpus`).
    if r.gpus.len() > 1 {
        for g in &r.gpus {
            outln!(
                "  GPU {}: {} frames at {:.1} fps, {} worker{}, VRAM peak {:.0} MiB{}{}{}",
                g.gpu,
                g.frames,
                g.fps,
                g.workers,
                if g.workers == 1 { "" } else { "s" },
                g.vram_peak as f64 / 1048576.0,
                g.device_peak.map_or(String::new(), |p| format!(
                    " (the device {:.0} MiB)",
                    p as f64 / 1048576.0
                )),
                g.failed
                    .as_ref()
                    .map_or(String::new(), |why| format!("; failed: {why}")),
                g.stand_in_for.map_or(String::new(), |d| format!(
                    " [GPU {d} standing in: RAVE_TEST_GPU_COPIES]"
                ))
            );
        }
    }
    if !r.input_damage.is_clean() {
        outln!(
            "  warning: damaged input (kept with --allow-corrupt): {}",
            r.input_damage.describe()
        );
    }
}

/// "first frame after 1.23 s (probe 0.01 s, index 0.02 s, load_model 0.80 s, ...)".
fn first_frame_line(first: f64, steps: &[rave_pipeline::report::StartupStep]) -> String {
    let steps: Vec<String> = steps
        .iter()
        .map(|s| format!("{} {:.2} s", s.name, s.seconds))
        .collect();
    format!("first frame after {first:.2} s ({})", steps.join(", "))
}

/// The segments line: how many, how many this run upscaled and reused, the workers, and
/// why a video is one segment (or where the kept work folder is).
fn print_segments(s: &rave_pipeline::report::SegmentsReport) {
    let mut line = format!(
        "  segments: {} ({} upscaled by this run, {} reused from an earlier one), {} at once",
        s.total, s.processed, s.reused, s.jobs
    );
    if let Some(why) = &s.single_reason {
        line.push_str(&format!("; one segment because {why}"));
    }
    outln!("{line}");
    if let (true, Some(work)) = (s.work_kept, &s.work) {
        outln!("  work folder kept: {}", console::shown(work));
    }
}

/// After a batch of inputs: the counts, then each input with its status and output, or its
/// error.
pub fn print_batch(b: &BatchReport) {
    let counts: Vec<String> = InputStatus::ALL
        .into_iter()
        .map(|status| (b.count(status), status.words()))
        .filter(|(n, _)| *n > 0)
        .map(|(n, name)| format!("{n} {name}"))
        .collect();
    outln!(
        "batch: {} input(s) into {}: {}",
        b.results.len(),
        console::shown(&b.output_folder),
        counts.join(", ")
    );
    for r in &b.results {
        let (input, output) = (console::shown(&r.input), console::shown(&r.output));
        let frames = r.report.as_ref().map_or(0, |r| r.frames_out);
        let reason = r.error.as_ref().map_or("", |e| e.message.as_str());
        let about = failure::naming(reason, &r.input);
        match r.status {
            InputStatus::Done => outln!("  done         {input} -> {output} ({frames} frames)"),
            InputStatus::Partial => {
                outln!("  partial      {input} -> {output} ({frames} frames, interrupted)")
            }
            InputStatus::Failed => outln!(
                "  failed       {about} (exit {})",
                r.error.as_ref().map_or(1, |e| e.exit_code)
            ),
            InputStatus::Interrupted => outln!("  interrupted  {about}"),
            InputStatus::NotStarted => outln!("  not started  {input}"),
            InputStatus::Skipped => outln!("  skipped      {input} -> {output} (it exists)"),
        }
    }
    for l in &b.left_out {
        let file = console::shown(&l.file);
        match &l.reason {
            LeftOutReason::OutputOfInput { output_of } => outln!(
                "  left out     {file} (RAVE's output of {}, not an input)",
                console::shown(output_of)
            ),
            LeftOutReason::RavePartial => outln!(
                "  left out     {file} (RAVE's partial output of an interrupted run, not an input)"
            ),
            LeftOutReason::PartialName => outln!(
                "  left out     {file} (named as RAVE names a partial output; to upscale it, give it with -i {file})"
            ),
        }
    }
    for line in batch_advice(b) {
        outln!("{line}");
    }
}

/// After the fps of a run that reused segments of an earlier one: which frames it counts.
fn reuse_note(upscaled: u64, out: u64) -> String {
    match upscaled {
        0 if out > 0 => " (every frame reused from an earlier run)".into(),
        n if n < out => {
            format!(" over the {n} frames upscaled by this run (the others were reused)")
        }
        _ => String::new(),
    }
}

/// What to do after a batch that did not finish: running it again finishes what was
/// interrupted, not started, or failed for a reason outside the input; an input refused
/// for what it holds (exit 3: damaged, not a video) fails the same way again, as does one
/// these options cannot do (exit 4: a stream the container cannot hold, a frame size the
/// encoder cannot code; exit 5: frames the model cannot take; exit 2: an option or work
/// folder), as does one whose output's name cannot be used (exit 4: a folder or a link to
/// nothing in its place, a file where its work folder goes, the input's own name, a name too
/// long), and one that could not be read (exit 3: gone,
/// moved, no permission) needs the user first.
fn batch_advice(b: &BatchReport) -> Vec<String> {
    /// The error of an input that failed.
    fn failure(r: &InputResult) -> Option<&crate::failure::ErrorObject> {
        r.error.as_ref().filter(|_| r.status == InputStatus::Failed)
    }
    // Whose job must start over, as its own message says: the input changed since its
    // segments were made (during the run or between runs), or its work folder holds the job
    // planned with other settings.
    let restart = |r: &&InputResult| {
        failure(r).is_some_and(|e| {
            e.message.contains("--restart")
                // Where --restart is no cure: another folder's manifest, a job another
                // process is discarding (a rerun is enough), a manifest of another RAVE.
                && !e.message.contains("(--restart included)")
                && !e.message.contains("being discarded by another RAVE process")
                && !e.message.contains("finish the job with the RAVE that planned it")
        })
    };
    // Refused for what these options cannot do with this input: its output (a stream the
    // container cannot hold, a size the encoder cannot code), the model with its frames,
    // an option or work folder (exit 2).
    let unwritable = |r: &&InputResult| {
        !restart(r)
            && failure(r).is_some_and(|e| {
                [
                    "stream_unstorable",
                    "output_size_unsupported",
                    "model_metadata",
                ]
                .contains(&e.kind)
                    || e.family == ErrorFamily::Usage
            })
    };
    // Refused for its output's name: a folder or a link to nothing in its place, a name too
    // long for the files RAVE puts beside it (exit 4), until the user changes it.
    let misnamed = |r: &&InputResult| failure(r).is_some_and(|e| e.kind == "output_name_unusable");
    let refused = |r: &&InputResult| failure(r).is_some_and(|e| e.family == ErrorFamily::Input);
    let unreadable = |r: &&InputResult| {
        !restart(r)
            && failure(r)
                .is_some_and(|e| e.family == ErrorFamily::Input && e.kind == "input_unreadable")
    };
    let restart_inputs = b.results.iter().filter(restart).count();
    let unreadable_inputs = b.results.iter().filter(unreadable).count();
    let refused_inputs = b
        .results
        .iter()
        .filter(|r| refused(r) && !restart(r))
        .count()
        - unreadable_inputs;
    let unwritable_outputs = b.results.iter().filter(unwritable).count();
    let misnamed_outputs = b.results.iter().filter(misnamed).count();
    let resumable = b
        .results
        .iter()
        .filter(|r| !refused(r) && !unwritable(r) && !misnamed(r) && !restart(r))
        .any(|r| {
            matches!(
                r.status,
                InputStatus::Failed
                    | InputStatus::Partial
                    | InputStatus::Interrupted
                    | InputStatus::NotStarted
            )
        });
    let mut advice = Vec::new();
    if resumable {
        advice.push(format!(
            "to finish the batch, {}: the done inputs are left alone, the interrupted ones resume",
            crate::batch::FINISH_BATCH
        ));
    }
    if unreadable_inputs > 0 {
        advice.push(format!(
            "{unreadable_inputs} input(s) could not be read (exit 3: gone, moved, not readable by you, not a regular file, or a name that is not UTF-8; the reason is above); once each is a readable file in its place (renamed where its name was the reason), run again with --skip-existing"
        ));
    }
    if restart_inputs > 0 {
        advice.push(format!(
            "{restart_inputs} input(s) must be started over (exit 2 or 3: the input changed since its segments were made, or its work folder holds its job planned with other settings; the reason is above); once each input stays as it is, run again with --skip-existing --restart (the done outputs are left alone; the others start over, interrupted ones included)"
        ));
    }
    if unwritable_outputs > 0 {
        advice.push(format!(
            "{unwritable_outputs} input(s) failed for what these options cannot do with them (exit 2, 4 or 5: a stream the container cannot hold, a frame size the encoder or the model cannot take, an option or work folder; the reason is above); running again does not change that; upscale each on its own (rave upscale -i IN -o OUT) as its message advises"
        ));
    }
    if misnamed_outputs > 0 {
        advice.push(format!(
            "{misnamed_outputs} input(s) failed for their output's name (exit 4: a folder or a link to nothing in its place, a file where its work folder goes, the input's own name, or a name too long; the reason is above); running again fails the same way until that name is free or the input renamed; then run again with --skip-existing"
        ));
    }
    // Damaged inputs --allow-corrupt upscales, as their own messages say (not one of
    // which no frame decodes, nor one already refused with the option).
    let advised = |r: &&InputResult, words: &str| {
        refused(r) && !restart(r) && failure(r).is_some_and(|e| e.message.contains(words))
    };
    // Those whose damage changed a segment's frames must also be read as one segment.
    let one_segment = b
        .results
        .iter()
        .filter(|r| advised(r, "pass --allow-corrupt --segment-frames"))
        .count();
    let curable = b
        .results
        .iter()
        .filter(|r| advised(r, "pass --allow-corrupt"))
        .count();
    if refused_inputs > 0 {
        let run_again = match one_segment {
            0 => "--allow-corrupt --skip-existing",
            _ => {
                "--allow-corrupt --segment-frames 1000000000 --skip-existing (each read as one segment)"
            }
        };
        let what = match curable {
            0 => String::new(),
            n if n == refused_inputs => {
                format!("; to upscale what a damaged one holds, run again with {run_again}")
            }
            n => format!(
                "; to upscale what can be read of the {n} whose message says to pass --allow-corrupt, run again with {run_again}"
            ),
        };
        advice.push(format!(
            "{refused_inputs} input(s) failed with exit 3 (damaged or not a video: the reason is above); running again does not change that{what}"
        ));
    }
    advice
}

/// After `rave benchmark`.
pub fn print_benchmark(r: &BenchmarkReport) {
    outln!(
        "benchmark: {} on {}, {}x{} -> {}x{}",
        r.model,
        r.backend,
        r.input_size[0],
        r.input_size[1],
        r.output_size[0],
        r.output_size[1],
    );
    outln!("  backend: {}", r.backend_reason);
    outln!("  tiling: {}", r.full_report.tiling.describe());
    outln!(
        "  inference alone:  {:8.2} fps ({} frames, batch {})",
        r.inference_only.fps,
        r.inference_only.frames,
        r.inference_only.batch
    );
    for (label, run) in [("null encode", &r.null_encode), ("full pipeline", &r.full)] {
        outln!(
            "  {label:<16}  {:8.2} fps ({} frames in {:.2} s, {} segment{}); bottleneck: {}",
            run.fps,
            run.frames,
            run.elapsed_s,
            run.segments,
            if run.segments == 1 { "" } else { "s" },
            run.bottleneck
        );
    }
    outln!(
        "  null encode / inference alone = {:.2}; full / min(inference, encoder capacity) = {:.2}",
        r.null_vs_inference,
        r.full_vs_bound
    );
    outln!(
        "  stages of the full pipeline ({} crf {} preset {}):",
        r.full_report.mux.encoder,
        r.full_report.encoder.crf,
        r.full_report.encoder.preset
    );
    outln!(
        "  {:<12} {:>8} {:>10} {:>10} {:>12}",
        "stage",
        "frames",
        "avg ms",
        "peak ms",
        "capacity fps"
    );
    for s in &r.full.stages {
        outln!(
            "  {:<12} {:>8} {:>10.2} {:>10.2} {:>12.2}",
            s.name,
            s.frames,
            s.avg_ms,
            s.peak_ms,
            s.capacity_fps
        );
    }
    if let Some(gpu) = &r.full_report.gpu {
        print_gpu(gpu);
    }
}

/// The GPU path's part of a run summary.
pub fn print_gpu(g: &rave_pipeline::report::GpuRunReport) {
    let b = &g.backend;
    outln!(
        "  gpu: {} ({}), {} binding, batch {}, CUDA graph {}, inference avg {:.2} ms peak {:.2} ms",
        b.provider.unwrap_or("?"),
        b.tensor_format.map_or("?".into(), |f| format!("{f:?}")),
        b.binding,
        b.max_batch,
        if b.cuda_graph { "on" } else { "off" },
        b.inference.avg_ms,
        b.inference.peak_ms
    );
    if let Some(ring) = &b.ring {
        outln!(
            "  ring: {} slots, reuse {}, contention {}; pointer audit mismatches {}",
            ring.slots,
            ring.metrics.reuse,
            ring.metrics.contention,
            b.audit_mismatches
        );
    }
    outln!(
        "  host copies per frame: {:.2} ({} uploads, {} downloads); host waits for the GPU per frame: {:.2}; VRAM {:.0} MiB now, {:.0} MiB peak{}; pool hit rate {:.1}%",
        g.host_copies.per_frame,
        g.host_copies.uploads,
        g.host_copies.downloads,
        g.host_copies.host_syncs_per_frame,
        g.health.vram_current as f64 / 1048576.0,
        g.health.vram_peak as f64 / 1048576.0,
        match (g.health.device_peak, g.health.vram_limit) {
            (Some(p), limit) => format!(
                " (the device {:.0} MiB at most beyond the context, runtimes included{})",
                p as f64 / 1048576.0,
                limit.map_or(String::new(), |l| format!(
                    "; budget {:.0} MiB",
                    l as f64 / 1048576.0
                ))
            ),
            (None, Some(l)) => format!(" (budget {:.0} MiB)", l as f64 / 1048576.0),
            (None, None) => String::new(),
        },
        g.health.pool_hit_rate * 100.0
    );
    outln!("  decoder: {}", g.decoder);
    outln!("  encoder: {}", g.encoder);
}

/// After `rave probe`.
pub fn print_probe(i: &MediaInfo) {
    let v = &i.video;
    outln!("{}: {}", console::shown(&i.path), i.container);
    if let Some(d) = i.duration_s {
        outln!("  duration   {d:.3} s");
    }
    outln!(
        "  video      #{} {} {}x{} {} ({}-bit), {:.3} fps{}",
        v.stream_index,
        v.codec,
        v.width,
        v.height,
        v.pixel_format,
        v.bit_depth,
        v.frame_rate,
        if v.variable_frame_rate {
            " (variable)"
        } else {
            ""
        }
    );
    if let Some(n) = v.frame_count {
        outln!(
            "  frames     {n}{}",
            if v.frame_count_estimated {
                " (estimated)"
            } else {
                ""
            }
        );
    }
    outln!(
        "  colour     primaries {}, transfer {}, matrix {}, range {}",
        v.color_primaries,
        v.color_transfer,
        v.color_matrix,
        v.color_range
    );
    if v.rotation_deg != 0.0 {
        outln!("  rotation   {} degrees", v.rotation_deg);
    }
    for s in &i.streams {
        if s.index == v.stream_index {
            continue;
        }
        let lang = s
            .language
            .as_deref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        let pic = if s.attached_picture {
            " (cover art)"
        } else {
            ""
        };
        outln!("  {:<10} #{} {}{lang}{pic}", s.kind, s.index, s.codec);
    }
    if i.chapters > 0 {
        outln!("  chapters   {}", i.chapters);
    }
}
