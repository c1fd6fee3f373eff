//! What a job tells about GPUs that failed under it (several GPUs): the error naming each
//! segment not upscaled and why, the warnings of a job that finished anyway, and the
//! report's account of the segments run again.

use std::collections::BTreeMap;
use std::path::Path;

use rave_core::error::{EngineError, list_segments};

use super::pool::PoolOutcome;
use super::queue::QueueOutcome;
use crate::report::{GpuLine, SegmentRetry};

/// Reasons shown in the error, one per segment (the rest are counted).
const REASONS_SHOWN: usize = 8;

/// The error for a job whose segments `outcome.segments.left` were not upscaled (of
/// `total`), saying for each why; `kept` is the work folder and its finished segments,
/// where it is still there and holds any.
pub fn missing_segments(
    outcome: &PoolOutcome,
    total: usize,
    kept: Option<(&Path, usize)>,
    rerun: &str,
) -> EngineError {
    let left = &outcome.segments.left;
    let mut failed_on: BTreeMap<usize, Vec<(usize, &str)>> = BTreeMap::new();
    for f in &outcome.segments.failures {
        failed_on
            .entry(f.segment)
            .or_default()
            .push((f.gpu, f.error.as_str()));
    }
    let mut reasons = Vec::new();
    let mut never_run = Vec::new();
    for &i in left {
        match failed_on.get(&i).map(Vec::as_slice) {
            None | Some([]) => never_run.push(i),
            Some([(gpu, e)]) => reasons.push(format!(
                "segment {i} failed on GPU {gpu} ({e}) and no worker on another GPU was left to run it again"
            )),
            Some(tries) => {
                let tries: Vec<String> = tries
                    .iter()
                    .map(|(gpu, e)| format!("on GPU {gpu} ({e})"))
                    .collect();
                reasons.push(format!("segment {i} failed {}", tries.join(" and ")));
            }
        }
    }
    if reasons.len() > REASONS_SHOWN {
        let more = reasons.len() - REASONS_SHOWN;
        reasons.truncate(REASONS_SHOWN);
        reasons.push(format!("{more} more failed likewise"));
    }
    if !never_run.is_empty() {
        reasons.push(format!(
            "{} {} not run: no worker that could run {} was left{}",
            list_segments(&never_run),
            if never_run.len() == 1 { "was" } else { "were" },
            if never_run.len() == 1 { "it" } else { "them" },
            load_failures(outcome)
        ));
    }
    let advice = match kept {
        Some((work, done)) => format!(
            "the {done} finished segment(s) are kept in {}: {rerun} to upscale the rest (with --gpus naming the GPUs that work)",
            work.display()
        ),
        None => format!(
            "no segment was finished; once the GPUs work, {rerun} (with --gpus naming the GPUs that work)"
        ),
    };
    EngineError::SegmentsFailed {
        missing: left.clone(),
        total,
        reasons,
        advice,
    }
}

/// " (GPU 1: the model did not load: ...)" for the workers that did not load, if any.
fn load_failures(outcome: &PoolOutcome) -> String {
    let failed: Vec<String> = outcome
        .load_failures
        .iter()
        .map(|(gpu, e)| format!("GPU {gpu}: the model did not load: {e}"))
        .collect();
    match failed.is_empty() {
        true => String::new(),
        false => format!(" ({})", failed.join("; ")),
    }
}

/// The warnings of a job that every segment finished although GPUs failed under it: per
/// worker that did not load or whose GPU failed, what happened to its segments.
pub fn survived(outcome: &PoolOutcome) -> Vec<String> {
    let mut warnings: Vec<String> = outcome
        .load_failures
        .iter()
        .map(|(gpu, e)| {
            format!(
                "GPU {gpu}: a segment worker did not load the model ({e}); the other GPUs ran its segments"
            )
        })
        .collect();
    let rerun = &outcome.segments.rerun;
    for f in &outcome.gpu_failures {
        let mut line = format!("GPU {} failed ({}): its worker stopped", f.gpu, f.error);
        if let Some(back) = &f.given_back
            && let Some((_, on)) = rerun.iter().find(|(s, _)| *s == back.failed)
        {
            line.push_str(&format!(
                ", and segment {} was upscaled again on GPU {on}",
                back.failed
            ));
        }
        warnings.push(line);
    }
    warnings
}

/// The GPUs' lines with `failed` set where a worker did not load or its GPU failed (a line
/// added for a GPU none of whose workers ran).
pub fn mark_failed_gpus(mut lines: Vec<GpuLine>, outcome: &PoolOutcome) -> Vec<GpuLine> {
    let failed = outcome
        .load_failures
        .iter()
        .map(|(gpu, e)| (*gpu, format!("the model did not load: {e}")))
        .chain(
            outcome
                .gpu_failures
                .iter()
                .map(|f| (f.gpu, f.error.to_string())),
        );
    for (gpu, why) in failed {
        let at = match lines.iter().position(|l| l.gpu == gpu) {
            Some(at) => at,
            None => {
                lines.push(GpuLine::idle(gpu));
                lines.len() - 1
            }
        };
        lines[at].failed.get_or_insert(why);
    }
    lines.sort_by_key(|l| l.gpu);
    lines
}

/// The segments that failed on a GPU and were finished on another, for the report.
pub fn retried(segments: &QueueOutcome) -> Vec<SegmentRetry> {
    segments
        .failures
        .iter()
        .filter_map(|f| {
            let (_, on) = segments.rerun.iter().find(|(s, _)| *s == f.segment)?;
            Some(SegmentRetry {
                segment: f.segment,
                failed_on: f.gpu,
                error: f.error.clone(),
                upscaled_on: *on,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::pool::WorkerFailure;
    use crate::segments::queue::{GivenBack, SegmentFailure};

    fn failure(segment: usize, gpu: usize, error: &str) -> SegmentFailure {
        SegmentFailure {
            segment,
            gpu,
            error: error.into(),
        }
    }

    fn outcome(segments: QueueOutcome) -> PoolOutcome {
        PoolOutcome {
            error: None,
            load_failures: Vec::new(),
            gpu_failures: Vec::new(),
            segments,
        }
    }

    #[test]
    fn the_error_names_each_missing_segment_and_why() {
        let mut out = outcome(QueueOutcome {
            left: vec![3, 5, 6, 7],
            failures: vec![
                failure(3, 1, "CUDA error: lost"),
                failure(3, 0, "CUDA error: ecc"),
                failure(5, 1, "CUDA error: lost"),
            ],
            rerun: Vec::new(),
        });
        out.load_failures = vec![(0, EngineError::Cuda("out of memory".into()))];
        let e = missing_segments(
            &out,
            9,
            Some((Path::new("/w"), 5)),
            "run the same command again",
        );
        assert_eq!(e.family().exit_code(), 7);
        let text = e.to_string();
        assert!(
            text.starts_with(
                "4 of 9 segments were not upscaled: segment 3 failed on GPU 1 (CUDA error: lost) and on GPU 0 (CUDA error: ecc); segment 5 failed on GPU 1 (CUDA error: lost) and no worker on another GPU was left to run it again; segments 6, 7 were not run: no worker that could run them was left (GPU 0: the model did not load: CUDA error: out of memory); the 5 finished segment(s) are kept in /w"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_job_that_finished_says_where_failed_segments_ran_again() {
        let mut out = outcome(QueueOutcome {
            left: Vec::new(),
            failures: vec![failure(3, 1, "CUDA error: lost")],
            rerun: vec![(3, 0)],
        });
        out.gpu_failures = vec![WorkerFailure {
            gpu: 1,
            error: EngineError::Cuda("lost".into()),
            given_back: Some(GivenBack {
                failed: 3,
                retried: true,
                others: vec![4],
            }),
        }];
        assert_eq!(
            survived(&out),
            vec![
                "GPU 1 failed (CUDA error: lost): its worker stopped, and segment 3 was upscaled again on GPU 0"
            ]
        );
        let retries = retried(&out.segments);
        assert_eq!(
            (
                retries[0].segment,
                retries[0].failed_on,
                retries[0].upscaled_on
            ),
            (3, 1, 0)
        );
        let lines = mark_failed_gpus(vec![GpuLine::idle(0)], &out);
        assert_eq!(lines.len(), 2, "a line for the GPU that failed");
        assert_eq!(lines[1].failed.as_deref(), Some("CUDA error: lost"));
        assert!(lines[0].failed.is_none());
    }
}
