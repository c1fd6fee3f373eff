//! `run_upscale`: one code path from a five-second clip to a film: the input is checked and
//! planned as segments (a short clip is one), the segments are upscaled into a work folder
//! (resuming what an interrupted run finished), and the output is assembled from them and
//! settled by how the run ended.

use std::time::Instant;

use rave_core::error::{EngineError, Result};

use crate::cancel::CancelToken;
use crate::config::UpscaleConfig;
use crate::output_file::OutputTarget;
use crate::progress::ProgressSink;
use crate::report::RunReport;
use crate::segments::startup::StartupClock;
use crate::segments::{job, run_job};

/// Said when the output exists and its job's work folder was left by a run that died
/// after the output took its name (see `job::remove_finished_work`).
pub const FINISHED_WORK_REMOVED: &str = "the work folder of the job that wrote this output was left by a run that ended before removing it; removed";

/// Upscale `config.input` into `config.output`. On cancellation the finalized partial file is
/// kept (and the work folder, for the resume) and the report says `partial`; on failure no
/// output is left behind.
pub fn run_upscale(
    config: &UpscaleConfig,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<RunReport> {
    let clock = StartupClock::new(Instant::now());
    let mut target = None;
    let prepared = job::prepare(
        config,
        progress,
        cancel,
        &mut |_| {
            if !config.null_output {
                target = Some(
                    OutputTarget::prepare(&config.output, &config.input, config.overwrite)?
                        .avoiding(config.segments.batch_outputs.clone()),
                );
            }
            Ok(())
        },
        &clock,
    );
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            if let Some(t) = &target {
                t.discard();
            }
            if matches!(e, EngineError::OutputExists(_))
                && let Some(work) = job::remove_finished_work(config)
            {
                progress.warning(&format!("{}: {FINISHED_WORK_REMOVED}", work.display()));
            }
            return Err(e);
        }
    };
    run_job::run_job(prepared, target.as_ref(), progress, cancel, &clock)
}
