//! A job's segment workers on their threads: each loads its model on its GPU (the GPUs side
//! by side, a GPU's workers one at a time), then takes segments from the queue until none
//! is left for it. With several GPUs a worker whose
//! GPU fails (a device error) stops alone and puts the segments it held back for the other
//! GPUs; any other error stops the whole job, as on one GPU or the CPU. Generic over the
//! worker, so the scheduling runs in tests without a GPU.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};

use rave_core::error::{EngineError, ErrorFamily, Result};
use rave_core::gpu::stand_in::driver_ordinal;

use super::queue::{GivenBack, Lease, QueueOutcome, SegmentQueue};
use super::worker::LoadTurn;
use crate::cancel::{CancelToken, StopReason};
use crate::gpu_list::assign;
use crate::stages::FirstError;

/// How a job's workers are laid out.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    /// The GPUs, in order (on the CPU, one entry: the run's device index).
    pub gpus: Vec<usize>,
    /// Workers in all (spread over the GPUs in turn).
    pub jobs: usize,
    /// Whether a GPU that fails leaves its segments to the others instead of stopping the
    /// job (with several GPUs).
    pub survive_gpu_failures: bool,
    /// Whether no worker starts on frames before every one has loaded (so that each one's
    /// VRAM fit measures only its own memory, under `--vram-limit`).
    pub wait_for_all_loaded: bool,
}

/// A worker whose GPU failed: where, why, and what became of the segments it held.
#[derive(Debug)]
pub struct WorkerFailure {
    /// Its GPU.
    pub gpu: usize,
    /// The error.
    pub error: EngineError,
    /// The segment it was upscaling and the ones opened ahead (`None`: it held none).
    pub given_back: Option<GivenBack>,
}

/// What the workers left.
#[derive(Debug)]
pub struct PoolOutcome {
    /// The error that stopped the job, if one did.
    pub error: Option<EngineError>,
    /// Workers whose model did not load, each with its GPU (only where GPU failures are
    /// survived; otherwise that is the job's error).
    pub load_failures: Vec<(usize, EngineError)>,
    /// Workers whose GPU failed mid-run (idem).
    pub gpu_failures: Vec<WorkerFailure>,
    /// What became of the segments.
    pub segments: QueueOutcome,
}

/// What a job's workers do: load a model for a turn, run segments from a lease, and end.
pub trait PoolWork: Sync {
    /// A loaded worker.
    type Worker: Send;
    /// Load a worker for `turn`; `cancel` is the worker's own token.
    fn load(&self, turn: LoadTurn, cancel: &CancelToken) -> Result<Self::Worker>;
    /// Run the segments `lease` hands out until it has none for the worker; each segment
    /// finished must be reported with [`Lease::finished`].
    fn run(&self, worker: &mut Self::Worker, lease: &Lease<'_>, cancel: &CancelToken)
    -> Result<()>;
    /// The worker's part is over (after its last run, or a failure).
    fn end(&self, worker: Self::Worker);
    /// Whether the worker's device itself is in error after a failed run (a CUDA context
    /// left unusable), whatever stage reported the failure first.
    fn device_failed(&self, worker: &Self::Worker) -> bool {
        let _ = worker;
        false
    }
}

/// Whether `e`, which stopped a worker whose device is (`device_failed`) or is not in
/// error, is the failure of that device, which another GPU may not share: a CUDA or
/// runtime error, or any error with the device left in error (NVDEC, NVENC or the model's
/// runtime may report a broken GPU first). A bad input, output, model or option fails
/// alike everywhere and stops the job.
pub fn is_device_failure(e: &EngineError, device_failed: bool) -> bool {
    e.family() == ErrorFamily::Runtime || (device_failed && e.family() != ErrorFamily::Usage)
}

/// Add `item` to a list the workers share.
fn push<T>(list: &Mutex<Vec<T>>, item: T) {
    list.lock().unwrap_or_else(|e| e.into_inner()).push(item);
}

/// Run `plan.jobs` workers of `work` over `queue` until every segment is done, none is left
/// that a worker may take, or `cancel` stops the job.
pub fn run_pool<P: PoolWork>(
    plan: &PoolPlan,
    segments: SegmentQueue,
    cancel: &CancelToken,
    work: &P,
) -> PoolOutcome {
    let queue = &segments;
    let slots = assign(&plan.gpus, plan.jobs);
    let next_slot = AtomicUsize::new(0);
    // Per GPU, the workers that have loaded so far: a GPU's workers load one at a time (so
    // that each one's VRAM fit measures its own memory), the GPUs side by side; GPUs that
    // are one device (RAVE_TEST_GPU_COPIES) one at a time, under that device's lock.
    let turns: Vec<Mutex<usize>> = plan.gpus.iter().map(|_| Mutex::new(0)).collect();
    let devices: Vec<usize> = plan.gpus.iter().map(|&g| driver_ordinal(g)).collect();
    let device_locks: Vec<Mutex<()>> = plan.gpus.iter().map(|_| Mutex::new(())).collect();
    let all_loaded = Barrier::new(plan.jobs);
    let errors = FirstError::default();
    let load_failures = Mutex::new(Vec::new());
    let gpu_failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..plan.jobs {
            s.spawn(|| {
                let token = cancel.child();
                let (mut lease, started) = {
                    let k = next_slot.fetch_add(1, Ordering::Relaxed);
                    let (gpu, sharing) = slots[k % slots.len()];
                    let on_gpu = plan.gpus.iter().position(|&g| g == gpu).unwrap_or(0);
                    let device = devices.iter().position(|&d| d == devices[on_gpu]);
                    let _device = device_locks[device.unwrap_or(0)]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    let mut loaded = turns[on_gpu].lock().unwrap_or_else(|e| e.into_inner());
                    let turn = LoadTurn {
                        gpu,
                        sharing,
                        to_start: sharing - *loaded,
                    };
                    *loaded += 1;
                    (queue.lease(gpu), work.load(turn, &token))
                };
                if plan.wait_for_all_loaded {
                    all_loaded.wait();
                }
                let gpu = lease.gpu();
                let mut worker = match started {
                    Ok(worker) => worker,
                    // A GPU that cannot load the model leaves the segments to the others
                    // (a bad option or model fails them all alike).
                    Err(e) if plan.survive_gpu_failures && is_device_failure(&e, false) => {
                        return push(&load_failures, (gpu, e));
                    }
                    Err(e) => return errors.record(e, cancel),
                };
                loop {
                    match work.run(&mut worker, &lease, &token) {
                        // Nothing is ever put back with one GPU: done, unless a segment was
                        // left for a worker then loading that has not taken it.
                        Ok(())
                            if !plan.survive_gpu_failures
                                && (token.is_cancelled() || !lease.has_work()) =>
                        {
                            break;
                        }
                        Ok(()) if !plan.survive_gpu_failures => continue,
                        Ok(()) => {}
                        // A Ctrl+C meanwhile does not make it the job's error.
                        Err(e)
                            if plan.survive_gpu_failures
                                && cancel.reason() != Some(StopReason::Failure)
                                && is_device_failure(&e, work.device_failed(&worker)) =>
                        {
                            let given_back = lease.give_back(&e.to_string());
                            push(
                                &gpu_failures,
                                WorkerFailure {
                                    gpu,
                                    error: e,
                                    given_back,
                                },
                            );
                            break;
                        }
                        Err(e) => {
                            errors.record(e, cancel);
                            break;
                        }
                    }
                    if token.is_cancelled() || !lease.wait_for_work(&|| cancel.is_cancelled()) {
                        break;
                    }
                }
                drop(lease);
                work.end(worker);
            });
        }
    });
    PoolOutcome {
        error: errors.take(),
        load_failures: load_failures.into_inner().unwrap_or_default(),
        gpu_failures: gpu_failures.into_inner().unwrap_or_default(),
        segments: segments.outcome(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use super::*;

    /// Workers that "upscale" a segment by sleeping, failing where told.
    struct Fake {
        /// (GPU, n): that GPU fails on the n-th segment its workers start (from 0).
        fail_nth: Vec<(usize, usize)>,
        /// Segments that fail on every GPU.
        poison: Vec<usize>,
        error: fn() -> EngineError,
        /// A GPU whose model does not load, and why.
        no_load_on: Option<usize>,
        load_error: fn() -> EngineError,
        /// Segments a worker takes before running them (the stages open the next one
        /// before the current one ends).
        take_two: bool,
        /// How long a segment takes on GPU 0 and on the others.
        per_segment: [Duration; 2],
        /// GPU 0's workers take nothing before GPU 1's first has taken a segment (so GPU 1
        /// surely gets one, however the threads are scheduled).
        gpu1_first: bool,
        gpu1_started: AtomicBool,
        started: Mutex<Vec<usize>>,
        /// (segment, GPU) of each segment finished.
        ran: Mutex<Vec<(usize, usize)>>,
        /// Stop the job once this many segments are done.
        user_stop_after: Option<usize>,
        cancel: CancelToken,
        /// How long a load takes on GPU 0 and on the others.
        load_time: [Duration; 2],
        /// Loads under way per GPU, and the most seen at once: per GPU and in all.
        loading: Mutex<(Vec<usize>, usize, usize)>,
    }

    impl Fake {
        fn new() -> Self {
            Self {
                fail_nth: Vec::new(),
                poison: Vec::new(),
                error: || EngineError::Cuda("an illegal memory access was encountered".into()),
                no_load_on: None,
                load_error: || EngineError::VramLimit {
                    requested: 1,
                    would_be: 2,
                    limit: 1,
                },
                take_two: false,
                per_segment: [Duration::from_millis(2); 2],
                gpu1_first: false,
                gpu1_started: AtomicBool::new(false),
                started: Mutex::new(vec![0; 2]),
                ran: Mutex::new(Vec::new()),
                user_stop_after: None,
                cancel: CancelToken::new(),
                load_time: [Duration::ZERO; 2],
                loading: Mutex::new((vec![0; 2], 0, 0)),
            }
        }

        fn ran(&self) -> Vec<(usize, usize)> {
            let mut ran = self.ran.lock().unwrap().clone();
            ran.sort_unstable();
            ran
        }

        fn run_on(
            &self,
            gpus: &[usize],
            jobs: usize,
            survive: bool,
            segments: usize,
        ) -> PoolOutcome {
            let plan = PoolPlan {
                gpus: gpus.to_vec(),
                jobs,
                survive_gpu_failures: survive,
                wait_for_all_loaded: false,
            };
            run_pool(
                &plan,
                SegmentQueue::new(0..segments, jobs),
                &self.cancel,
                self,
            )
        }

        fn wait_for_gpu1(&self) {
            let until = Instant::now() + Duration::from_secs(20);
            while !self.gpu1_started.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }

        /// Whether segment `i`, the next one started on `gpu`, fails there.
        fn fails(&self, gpu: usize, i: usize) -> bool {
            let mut started = self.started.lock().unwrap();
            let nth = started[gpu];
            started[gpu] += 1;
            self.poison.contains(&i) || self.fail_nth.contains(&(gpu, nth))
        }
    }

    impl PoolWork for Fake {
        type Worker = usize;

        fn load(&self, turn: LoadTurn, _: &CancelToken) -> Result<usize> {
            {
                let mut l = self.loading.lock().unwrap();
                l.0[turn.gpu] += 1;
                l.1 = l.1.max(l.0[turn.gpu]);
                l.2 = l.2.max(l.0.iter().sum());
            }
            std::thread::sleep(self.load_time[turn.gpu.min(1)]);
            self.loading.lock().unwrap().0[turn.gpu] -= 1;
            match self.no_load_on == Some(turn.gpu) {
                true => Err((self.load_error)()),
                false => Ok(turn.gpu),
            }
        }

        fn run(&self, gpu: &mut usize, lease: &Lease<'_>, cancel: &CancelToken) -> Result<()> {
            let gpu = *gpu;
            if self.gpu1_first && gpu == 0 {
                self.wait_for_gpu1();
            }
            while !cancel.is_cancelled() {
                let Some(first) = lease.take() else {
                    return Ok(());
                };
                let mut taken = vec![first];
                if self.take_two {
                    taken.extend(lease.take());
                }
                if gpu == 1 {
                    self.gpu1_started.store(true, Ordering::SeqCst);
                }
                for i in taken {
                    std::thread::sleep(self.per_segment[gpu.min(1)]);
                    if self.fails(gpu, i) {
                        cancel.cancel(StopReason::Failure);
                        return Err((self.error)());
                    }
                    let mut ran = self.ran.lock().unwrap();
                    ran.push((i, gpu));
                    lease.finished(i);
                    if Some(ran.len()) == self.user_stop_after {
                        self.cancel.cancel(StopReason::User);
                    }
                }
            }
            Ok(())
        }

        fn end(&self, _: usize) {}
    }

    #[test]
    fn the_gpus_load_side_by_side_each_one_worker_at_a_time() {
        let mut fake = Fake::new();
        fake.load_time = [Duration::from_millis(300); 2];
        let out = fake.run_on(&[0, 1], 4, true, 8);
        assert!(out.error.is_none() && out.segments.left.is_empty());
        let (_, per_gpu, in_all) = *fake.loading.lock().unwrap();
        assert_eq!(per_gpu, 1, "a GPU's workers load one at a time");
        assert_eq!(in_all, 2, "the two GPUs load at the same time");
        // One GPU: one load at a time, as before.
        let fake = Fake {
            load_time: [Duration::from_millis(20); 2],
            ..Fake::new()
        };
        fake.run_on(&[0], 2, false, 4);
        assert_eq!(fake.loading.lock().unwrap().2, 1);
    }

    #[test]
    fn a_gpu_still_loading_gets_its_share_of_a_short_job() {
        // GPU 0 is ready first and opens a segment ahead while it runs one: not the one
        // GPU 1 will take when it has loaded.
        let mut fake = Fake::new();
        fake.take_two = true;
        fake.load_time = [Duration::ZERO, Duration::from_millis(100)];
        fake.per_segment = [Duration::from_millis(1000); 2];
        let out = fake.run_on(&[0, 1], 2, true, 2);
        assert!(out.error.is_none() && out.segments.left.is_empty());
        assert_eq!(fake.ran(), vec![(0, 0), (1, 1)]);
        // One GPU, two workers: the first one ready, refused the segment ahead, comes back
        // for more when its own is done and ends once there is none.
        let mut fake = Fake::new();
        fake.take_two = true;
        fake.per_segment = [Duration::from_millis(300); 2];
        let out = fake.run_on(&[0], 2, false, 2);
        assert!(out.error.is_none() && out.segments.left.is_empty());
        assert_eq!(segments_of(&fake.ran()), vec![0, 1]);
    }

    fn segments_of(ran: &[(usize, usize)]) -> Vec<usize> {
        ran.iter().map(|&(i, _)| i).collect()
    }

    #[test]
    fn a_gpu_failing_mid_run_fails_only_its_segment_which_another_gpu_runs() {
        let mut fake = Fake::new();
        fake.gpu1_first = true;
        fake.fail_nth = vec![(1, 0)];
        let out = fake.run_on(&[0, 1], 4, true, 12);
        assert!(out.error.is_none(), "{:?}", out.error);
        let ran = fake.ran();
        assert_eq!(segments_of(&ran), (0..12).collect::<Vec<_>>(), "each once");
        assert_eq!(out.gpu_failures.len(), 1);
        let failed = &out.gpu_failures[0];
        let back = failed.given_back.clone().expect("it held a segment");
        assert_eq!((failed.gpu, back.retried, back.others.len()), (1, true, 0));
        let segment = back.failed;
        assert!(ran.contains(&(segment, 0)), "ran again on GPU 0: {ran:?}");
        assert_eq!(out.segments.rerun, vec![(segment, 0)]);
        assert!(out.segments.left.is_empty());
        assert!(!fake.cancel.is_cancelled(), "the job was not stopped");
    }

    #[test]
    fn on_one_gpu_or_for_an_error_of_the_output_the_job_stops_as_before() {
        let mut fake = Fake::new();
        fake.gpu1_first = true;
        fake.fail_nth = vec![(1, 0)];
        let out = fake.run_on(&[0, 1], 2, false, 12);
        assert!(matches!(out.error, Some(EngineError::Cuda(_))));
        assert_eq!(fake.cancel.reason(), Some(StopReason::Failure));
        assert!(fake.ran().len() < 12);

        let mut fake = Fake::new();
        fake.gpu1_first = true;
        fake.fail_nth = vec![(1, 0)];
        fake.error = || EngineError::Encode("No space left on device".into());
        let out = fake.run_on(&[0, 1], 2, true, 12);
        assert!(
            matches!(out.error, Some(EngineError::Encode(_))),
            "not a device failure: the other GPU would fail alike"
        );
        assert!(out.gpu_failures.is_empty());
    }

    #[test]
    fn a_segment_that_fails_on_two_gpus_is_left_and_named_and_the_rest_are_done() {
        let mut fake = Fake::new();
        fake.poison = vec![5];
        let out = fake.run_on(&[0, 1], 4, true, 12);
        assert!(out.error.is_none());
        assert_eq!(out.segments.left, vec![5]);
        let failed: Vec<(usize, usize)> = out
            .segments
            .failures
            .iter()
            .map(|f| (f.segment, f.gpu))
            .collect();
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(failed.contains(&(5, 0)) && failed.contains(&(5, 1)));
        // One worker on each GPU stopped at its failure; the others ran the rest, each once.
        let ran = segments_of(&fake.ran());
        let rest: Vec<usize> = (0..12).filter(|&i| i != 5).collect();
        assert_eq!(ran, rest);
    }

    #[test]
    fn the_segment_opened_ahead_goes_back_too() {
        let mut fake = Fake::new();
        fake.gpu1_first = true;
        fake.take_two = true;
        fake.fail_nth = vec![(1, 0)];
        let out = fake.run_on(&[0, 1], 2, true, 10);
        assert!(out.error.is_none());
        assert_eq!(segments_of(&fake.ran()), (0..10).collect::<Vec<_>>());
        let back = out.gpu_failures[0].given_back.clone().unwrap();
        assert_eq!(back.others.len(), 1, "the one opened ahead went back too");
        assert_eq!(
            out.segments.failures.len(),
            1,
            "charged to one segment only"
        );
        assert_eq!(out.segments.rerun, vec![(back.failed, 0)]);
        assert!(out.segments.left.is_empty());
    }

    #[test]
    fn an_idle_worker_waits_for_a_late_failure_on_another_gpu() {
        let mut fake = Fake::new();
        // GPU 1 is slow and fails on its first segment, long after GPU 0 has run out of
        // segments: GPU 0's worker must still be there to run it.
        fake.gpu1_first = true;
        fake.per_segment = [Duration::from_millis(1), Duration::from_millis(300)];
        fake.fail_nth = vec![(1, 0)];
        let out = fake.run_on(&[0, 1], 2, true, 4);
        assert!(out.error.is_none());
        assert_eq!(fake.ran().len(), 4);
        assert!(fake.ran().iter().all(|&(_, gpu)| gpu == 0));
        assert!(out.segments.left.is_empty());
        assert_eq!(out.segments.rerun.len(), 1);
    }

    #[test]
    fn a_gpu_whose_model_does_not_load_leaves_its_segments_to_the_others() {
        let mut fake = Fake::new();
        fake.no_load_on = Some(1);
        let out = fake.run_on(&[0, 1], 4, true, 9);
        assert!(out.error.is_none());
        assert_eq!(out.load_failures.len(), 2, "both of GPU 1's workers");
        assert_eq!(fake.ran().len(), 9);
        assert!(fake.ran().iter().all(|&(_, gpu)| gpu == 0));
        // With one GPU, it is the job's error.
        let mut fake = Fake::new();
        fake.no_load_on = Some(0);
        let out = fake.run_on(&[0], 2, false, 3);
        assert!(matches!(out.error, Some(EngineError::VramLimit { .. })));
        assert_eq!(out.segments.left, vec![0, 1, 2]);
        // A model that does not load is no GPU's fault: the job's error on any number.
        let mut fake = Fake::new();
        fake.no_load_on = Some(1);
        fake.load_error = || EngineError::ModelMetadata("not an image-to-image model".into());
        let out = fake.run_on(&[0, 1], 2, true, 3);
        assert!(matches!(out.error, Some(EngineError::ModelMetadata(_))));
        assert!(out.load_failures.is_empty());
    }

    #[test]
    fn a_user_stop_ends_every_worker_and_leaves_the_rest_pending() {
        let mut fake = Fake::new();
        fake.user_stop_after = Some(3);
        let out = fake.run_on(&[0, 1], 2, true, 50);
        assert!(out.error.is_none());
        assert!(out.gpu_failures.is_empty());
        let done = fake.ran().len();
        assert!((3..=4).contains(&done), "{done} done");
        assert_eq!(out.segments.left.len(), 50 - done);
    }
}
