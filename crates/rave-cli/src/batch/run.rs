//! Running a batch: every input's configuration built first (a bad flag or model stops it
//! before any work), then each input in turn with its own cancel token; a failed input is
//! reported and the next one started; Ctrl+C finishes the current input as a single run
//! does and starts no other.

use std::path::Path;

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::EncoderSettings;
use rave_pipeline::run_upscale;

use super::plan::{InputJob, LeftOut};
use super::report::{BatchReport, InputResult};
use crate::args::{GlobalArgs, UpscaleArgs};
use crate::commands::upscale::pipeline_config;
use crate::interrupt::Interrupts;
use crate::{failure, progress_view, summary};

/// What finishes a batch that stopped or had failures: the inputs done are left alone, the
/// interrupted ones resume.
pub const FINISH_BATCH: &str = "run the same command again with --skip-existing";

/// Upscale each of `jobs` into `folder`, print each run's summary (or error) as it ends and
/// the batch's at the end (with the files `left_out` as earlier outputs); returns the exit
/// code (see [`BatchReport::new`]).
pub fn run(
    global: &GlobalArgs,
    args: &UpscaleArgs,
    encoder: EncoderSettings,
    folder: &Path,
    jobs: &[InputJob],
    left_out: Vec<LeftOut>,
) -> Result<i32> {
    // The same batch again would stop on the outputs already finished.
    let rerun = (!args.skip_existing).then(|| FINISH_BATCH.to_string());
    let outputs: std::sync::Arc<std::collections::HashSet<_>> =
        std::sync::Arc::new(jobs.iter().map(|j| j.output.clone()).collect());
    let configs = jobs
        .iter()
        .map(|j| {
            let mut config = pipeline_config(
                global,
                &args.run,
                args,
                encoder.clone(),
                &j.input,
                &j.output,
            )?;
            config.segments.rerun.clone_from(&rerun);
            config.segments.batch_outputs = outputs.clone();
            Ok(config)
        })
        .collect::<Result<Vec<_>>>()?;
    let inputs: Vec<&Path> = jobs.iter().map(|j| j.input.as_path()).collect();
    rave_pipeline::output_lock::protect_inputs(&inputs);
    std::fs::create_dir_all(folder).map_err(|e| EngineError::OutputUnwritable {
        path: folder.to_path_buf(),
        reason: format!("cannot create the output folder: {e}"),
    })?;
    let json = args.run.json;
    let jsonl = args.run.progress == crate::args::ProgressArg::Jsonl;
    let interrupts = Interrupts::install(crate::interrupt::ON_BATCH)?;
    // The batch's one report, filled as inputs end: a second Ctrl+C prints it as far as it
    // got (with its error), so a script still learns which outputs are done.
    let mut batch = BatchReport::new(folder.to_path_buf(), Vec::with_capacity(jobs.len()), true);
    batch.left_out = left_out;
    crate::interrupt::batch_started(&batch);
    for (i, (job, config)) in jobs.iter().zip(&configs).enumerate() {
        if interrupts.asked() {
            batch.results.push(InputResult::not_started(job));
            continue;
        }
        if args.skip_existing && job.is_done() {
            // A run that died after its output took its name left the work folder.
            rave_pipeline::segments::job::remove_finished_work(config);
            progress_view::announce_skip(args.run.progress, Some((i + 1, jobs.len())), job);
            ended(&mut batch, InputResult::skipped(job));
            continue;
        }
        progress_view::announce_input(args.run.progress, (i + 1, jobs.len()), job);
        // A fresh display too: each input's warnings are said once for that input.
        let progress = progress_view::sink_for(args.run.progress);
        let run = match super::folder::not_utf8_input(&job.input) {
            Some(refused) => Err(refused),
            None => run_upscale(config, progress.as_ref(), &interrupts.next_run()),
        };
        if let Err(e) = &run
            && job.finished_meanwhile(e, args.skip_existing)
        {
            progress_view::announce_skip(args.run.progress, Some((i + 1, jobs.len())), job);
            ended(&mut batch, InputResult::skipped(job));
            continue;
        }
        if let Ok(report) = &run {
            progress_view::run_ended(args.run.progress, Some(report.status));
        }
        match &run {
            Ok(report) if !json => summary::print_run(report),
            Ok(_) => {}
            Err(err) => failure::report_input(err, &job.input, json, jsonl),
        }
        ended(&mut batch, InputResult::of_run(job, run));
    }
    batch.set_exit_code(interrupts.asked());
    crate::interrupt::work_over();
    if jsonl {
        progress_view::batch_ended(&batch);
    }
    crate::commands::print_result(json, &batch, summary::print_batch);
    Ok(batch.exit_code)
}

/// Add `result` to the batch's: an input ended (a second Ctrl+C's JSON error lists it too).
fn ended(batch: &mut BatchReport, result: InputResult) {
    crate::interrupt::input_ended(&result);
    batch.results.push(result);
}
