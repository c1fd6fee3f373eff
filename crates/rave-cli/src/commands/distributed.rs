//! `rave plan`, `rave segment`, `rave assemble`, `rave status`: one job split over many
//! workers through a shared work folder. The plan records the `rave upscale` options; every
//! later command rebuilds the same configuration from them.

use std::path::{Path, PathBuf};

use clap::Parser;
use rave_core::error::{EngineError, Result};
use rave_pipeline::UpscaleConfig;
use rave_pipeline::segments::commit;
use rave_pipeline::segments::distributed;
use rave_pipeline::segments::done_segments::file_present;
use rave_pipeline::segments::manifest::{Manifest, SegmentState};
use rave_pipeline::segments::work_folder::WorkFolder;

use crate::args::{Cli, Command, GlobalArgs, SegmentCmdArgs, StatusArgs, UpscaleArgs, WorkArgs};
use crate::console::outln;
use crate::interrupt::{self, interrupt_on_ctrl_c};
use crate::progress_view;

/// Where the segment index comes from when `--index` is absent, in order.
const INDEX_VARIABLES: [&str; 3] = [
    "SLURM_ARRAY_TASK_ID",
    "JOB_COMPLETION_INDEX",
    "AWS_BATCH_JOB_ARRAY_INDEX",
];

/// `rave plan`: write the manifest and print the segment count.
pub fn plan(global: &GlobalArgs, args: &UpscaleArgs, raw: &[String]) -> Result<i32> {
    let one_file = match args.input.as_slice() {
        [input] if !input.is_dir() => Some(input),
        _ => None,
    };
    let Some(input) = one_file else {
        return Err(EngineError::Config(
            "rave plan takes one input (-i FILE); plan each file of a folder as its own job".into(),
        ));
    };
    if args.skip_existing {
        return Err(EngineError::Config(
            "--skip-existing applies to rave upscale: rave plan always plans the job (its output is written by rave assemble)".into(),
        ));
    }
    // An output folder (as rave upscale takes it): the output takes the input's name there.
    let output = match crate::batch::plan(std::slice::from_ref(input), &args.output)? {
        crate::batch::Plan::Single(job) => job.output,
        crate::batch::Plan::Batch { folder, jobs, .. } => {
            std::fs::create_dir_all(&folder).map_err(|e| EngineError::OutputUnwritable {
                path: folder.clone(),
                reason: format!("cannot create the output folder: {e}"),
            })?;
            jobs.into_iter()
                .next()
                .map(|j| j.output)
                .ok_or_else(|| EngineError::Config("no input to plan".into()))?
        }
    };
    let mut config = super::upscale::config_for(global, args, input, &output)?;
    config.segments.options = options_after(raw, "plan");
    let cancel = interrupt_on_ctrl_c(interrupt::ON_PLAN)?;
    let progress = progress_view::sink_for(args.run.progress);
    let manifest = distributed::plan(&config, progress.as_ref(), &cancel)?;
    progress_view::run_ended(args.run.progress, None);
    let work = distributed::work_of(&config);
    let summary = serde_json::json!({
        "segments": manifest.segments.len(),
        "frames": manifest.frames_total,
        "work": rave_pipeline::segments::paths::absolute(work.path()),
        "output": manifest.output,
        "done": manifest.segments.len() - manifest.missing().len(),
        "single_reason": manifest.single_reason,
    });
    super::print_result(args.run.json, &summary, |_| {
        outln!(
            "planned {} segment(s), {} frames, in {}; run `rave segment --work {} --index I` for each I from 0 to {}, then `rave assemble --work {}`",
            manifest.segments.len(),
            manifest.frames_total,
            work.path().display(),
            work.path().display(),
            manifest.segments.len().saturating_sub(1),
            work.path().display()
        );
    });
    Ok(0)
}

/// `rave segment`: process one segment, with this node's `--ort-lib` / `--models-dir` where
/// given (each node may have ONNX Runtime or the models elsewhere) in place of the plan's.
pub fn segment(global: &GlobalArgs, args: &SegmentCmdArgs) -> Result<i32> {
    let index = match args.index {
        Some(i) => i,
        None => index_from_environment()?,
    };
    let own = GlobalArgs {
        // Relative to where this worker was started, not where the job was planned.
        models_dir: global.models_dir.as_deref().map(absolute),
        ort_lib: global.ort_lib.as_deref().map(absolute),
    };
    let (config, _) = job_config(&args.work, false, Role::Segment(&own))?;
    let cancel = interrupt_on_ctrl_c(interrupt::ON_SEGMENT)?;
    let progress = progress_view::sink_for(crate::args::ProgressArg::Auto);
    let report = distributed::run_segment(&config, index, progress.as_ref(), &cancel)?;
    super::print_result(args.json, &report, |r| {
        if r.already_done {
            outln!("segment {} of {}: already done", r.index, r.total);
        } else {
            outln!(
                "segment {} of {}: {} frames in {:.1} s ({:.2} fps){}",
                r.index,
                r.total,
                r.frames,
                r.elapsed_s,
                r.fps,
                if r.kept {
                    ""
                } else {
                    "; another worker finished it first, its file is kept"
                }
            );
            if let Some(backend) = &r.backend {
                outln!("  backend: {}", backend.reason);
            }
            if let Some(tiling) = &r.tiling {
                outln!("  tiling: {}", tiling.describe());
            }
        }
    });
    Ok(0)
}

/// `rave assemble`: write the output.
pub fn assemble(args: &WorkArgs) -> Result<i32> {
    let (mut config, _) = job_config(&args.work, args.keep_work, Role::Assemble)?;
    config.overwrite |= args.overwrite;
    let cancel = interrupt_on_ctrl_c(interrupt::ON_ASSEMBLE)?;
    let report = distributed::assemble(&config, &cancel)?;
    super::print_result(args.json, &report, |r| {
        outln!(
            "assembled {} ({} frames from {} segments) in {:.1} s",
            r.output.display(),
            r.frames,
            r.segments,
            r.elapsed_s
        );
        if let Some(work) = &r.work_kept {
            outln!(
                "  work folder kept: {} ({})",
                work.display(),
                match args.keep_work {
                    true => "--keep-work",
                    false =>
                        "another rave process works in it: remove the folder once that has ended",
                }
            );
        }
    });
    Ok(0)
}

/// `rave status`: list the segments.
pub fn status(args: &StatusArgs) -> Result<i32> {
    let work = WorkFolder::at(&args.work);
    let manifest = work.read()?;
    // A segment marked done whose file is gone or of another size is redone by the next
    // run: not counted as done.
    let lost: Vec<usize> = manifest
        .segments
        .iter()
        .filter(|s| s.state == SegmentState::Done && !file_present(&work, s))
        .map(|s| s.plan.index)
        .collect();
    let done = manifest.segments.len() - manifest.missing().len() - lost.len();
    // Marked running by a process of this host that has ended (killed, or aborted by a
    // second Ctrl+C): stopped, whatever the manifest says.
    let stopped: Vec<usize> = manifest
        .segments
        .iter()
        .filter(|s| s.state == SegmentState::Running)
        .filter(|s| s.worker.as_deref().is_some_and(commit::worker_has_ended))
        .map(|s| s.plan.index)
        .collect();
    let value = serde_json::json!({
        "input": manifest.input,
        "output": manifest.output,
        "frames": manifest.frames_total,
        "total": manifest.segments.len(),
        "done": done,
        "lost": lost,
        "stopped": stopped,
        "segments": manifest.segments,
    });
    super::print_result(args.json, &value, |_| {
        print_status(&manifest, done, &lost, &stopped)
    });
    Ok(0)
}

fn print_status(manifest: &Manifest, done: usize, lost: &[usize], stopped: &[usize]) {
    outln!(
        "{} -> {}: {done} of {} segments done",
        manifest.input.display(),
        manifest.output.display(),
        manifest.segments.len()
    );
    for s in &manifest.segments {
        let worker = s.worker.as_deref().unwrap_or("a worker");
        let state = match s.state {
            SegmentState::Done if lost.contains(&s.plan.index) => {
                "done, but its file is missing or changed: the next run redoes it".to_string()
            }
            SegmentState::Done => "done".into(),
            SegmentState::Running if stopped.contains(&s.plan.index) => {
                format!("stopped: {worker} has ended; the next run redoes it")
            }
            SegmentState::Running => format!("running (or stopped) by {worker}"),
            SegmentState::Pending => "pending".into(),
        };
        outln!(
            "  {:>5}  frames {:>8}-{:<8} {state}",
            s.plan.index,
            s.plan.first_frame,
            s.plan.first_frame + s.plan.frames.saturating_sub(1),
        );
    }
}

/// The arguments after the subcommand `name` (what `rave upscale` would take).
fn options_after(raw: &[String], name: &str) -> Vec<String> {
    match raw.iter().position(|a| a == name) {
        Some(at) => raw[..at]
            .iter()
            .skip(1)
            .chain(&raw[at + 1..])
            .cloned()
            .collect(),
        None => Vec::new(),
    }
}

/// What the job's configuration is rebuilt for.
enum Role<'a> {
    /// A worker: the model folder and runtime library this node names (where it names
    /// them) in place of the plan's.
    Segment(&'a GlobalArgs),
    /// Joining the segments: no model runs, so none is looked for.
    Assemble,
}

/// A path as from the working directory now (kept as given where that cannot be read).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The configuration the job in `work` was planned with, rebuilt for `role` from its
/// options (relative paths as seen from where it was planned), using `work` as its work
/// folder.
fn job_config(work: &Path, keep_work: bool, role: Role<'_>) -> Result<(UpscaleConfig, Manifest)> {
    let manifest = WorkFolder::at(work).read()?;
    let work = rave_pipeline::segments::paths::absolute(work);
    if manifest.options.is_empty() {
        return Err(EngineError::WorkFolderMismatch {
            work,
            reason: "this job was started by `rave upscale`, not planned by `rave plan`: run the same `rave upscale` command again to finish it (`rave segment` and `rave assemble` take folders made by `rave plan`)".into(),
        });
    }
    if manifest.invocation_dir.is_dir() {
        std::env::set_current_dir(&manifest.invocation_dir)?;
    }
    let mut argv = vec!["rave".to_string(), "upscale".to_string()];
    argv.extend(manifest.options.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| EngineError::WorkFolderMismatch {
        work: work.clone(),
        reason: format!(
            "its manifest's options cannot be read by this RAVE ({}); plan the job again",
            e.kind()
        ),
    })?;
    let Command::Upscale(args) = cli.command else {
        unreachable!("parsed as upscale");
    };
    let mut global = cli.global;
    let (input, output) = (&manifest.input, &manifest.output);
    let mut config = match role {
        Role::Assemble => super::upscale::config_with_model(&args, input, output, &manifest.model)?,
        Role::Segment(own) => {
            // The plan's paths are the planning machine's: where one is not on this node,
            // say so, and which option of `rave segment` gives this node's own.
            for (planned, given, option) in [
                (&global.models_dir, &own.models_dir, "--models-dir DIR"),
                (&global.ort_lib, &own.ort_lib, "--ort-lib PATH"),
            ] {
                if let (Some(p), None) = (planned, given)
                    && !p.exists()
                {
                    return Err(EngineError::Config(format!(
                        "the job was planned with {} {}, which this machine does not have: give this machine's with `rave segment ... {option}`",
                        option.split(' ').next().unwrap_or(option),
                        p.display()
                    )));
                }
            }
            global.models_dir = own.models_dir.clone().or(global.models_dir);
            global.ort_lib = own.ort_lib.clone().or(global.ort_lib);
            super::upscale::config_for(&global, &args, input, output)?
        }
    };
    config.segments.work = Some(work);
    config.segments.keep_work |= keep_work;
    Ok((config, manifest))
}

fn index_from_environment() -> Result<usize> {
    for name in INDEX_VARIABLES {
        if let Ok(value) = std::env::var(name) {
            return value.trim().parse().map_err(|_| {
                EngineError::Config(format!(
                    "{name}={value:?} is not a segment index (a whole number from 0)"
                ))
            });
        }
    }
    Err(EngineError::Config(format!(
        "no segment index: pass --index I, or run as an array task ({})",
        INDEX_VARIABLES.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_options_are_what_upscale_takes() {
        let raw: Vec<String> = ["rave", "-v", "plan", "-i", "a.mkv", "-o", "b.mkv"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            options_after(&raw, "plan"),
            ["-v", "-i", "a.mkv", "-o", "b.mkv"]
        );
    }
}
