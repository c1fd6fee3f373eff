//! The segments a job's workers share: handed out in order; the segments a worker held when
//! its GPU failed are put back for a worker on another GPU, once; an idle worker waits while
//! a busy one may still put a segment back, so no retry is left without a taker.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Times a segment may fail before it is given up: it is retried once.
pub const ATTEMPTS: usize = 2;

/// How often an idle worker looks at its stop condition while it waits.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// A segment that failed on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFailure {
    /// The segment's index in the job.
    pub segment: usize,
    /// The GPU its worker was on.
    pub gpu: usize,
    /// What failed there.
    pub error: String,
}

/// What became of the segments when every worker has ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct QueueOutcome {
    /// Segments not done, in order: never taken (the run stopped, or no worker was left
    /// that could take them), failed as many times as allowed, or held by a worker whose
    /// run stopped.
    pub left: Vec<usize>,
    /// Every failure, in the order they happened.
    pub failures: Vec<SegmentFailure>,
    /// Segments finished after failing elsewhere, with the GPU that finished them.
    pub rerun: Vec<(usize, usize)>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<usize>,
    /// Per segment that failed, the GPUs it failed on (it does not run there again).
    failed_on: HashMap<usize, Vec<usize>>,
    /// Segments failed too often, or held by a worker whose run stopped.
    given_up: Vec<usize>,
    failures: Vec<SegmentFailure>,
    rerun: Vec<(usize, usize)>,
    /// Workers that may still take or put back segments (not idle, not ended).
    busy: usize,
    /// Workers that have not taken their first segment (loading their model) and may
    /// still: segments are not opened ahead at their expense.
    unstarted: usize,
}

impl State {
    /// The first pending segment a worker on `gpu` may run: none that failed there.
    fn eligible(&self, gpu: usize) -> Option<usize> {
        self.pending.iter().position(|i| {
            self.failed_on
                .get(i)
                .is_none_or(|gpus| !gpus.contains(&gpu))
        })
    }
}

/// The segments of a job still to run, shared by its workers.
pub struct SegmentQueue {
    state: Mutex<State>,
    changed: Condvar,
}

impl SegmentQueue {
    /// `segments` to run, in this order, by `workers` workers (each takes a [`Lease`]).
    pub fn new(segments: impl IntoIterator<Item = usize>, workers: usize) -> Self {
        Self {
            state: Mutex::new(State {
                pending: segments.into_iter().collect(),
                busy: workers,
                unstarted: workers,
                ..State::default()
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One worker's access, for a worker on `gpu`; dropping it ends the worker's part.
    pub fn lease(&self, gpu: usize) -> Lease<'_> {
        Lease {
            queue: self,
            gpu,
            held: Mutex::new(Vec::new()),
            busy: true,
            started: AtomicBool::new(false),
        }
    }

    /// What became of the segments (once every lease is dropped).
    pub fn outcome(self) -> QueueOutcome {
        let state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut left: Vec<usize> = state.pending.into_iter().chain(state.given_up).collect();
        left.sort_unstable();
        QueueOutcome {
            left,
            failures: state.failures,
            rerun: state.rerun,
        }
    }
}

/// What a worker whose GPU failed gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenBack {
    /// The segment it was upscaling, charged with the failure.
    pub failed: usize,
    /// Whether that segment goes to another GPU (else it has failed too often).
    pub retried: bool,
    /// The segments it had opened ahead, back in the queue uncharged.
    pub others: Vec<usize>,
}

/// One worker's part of the queue: the segments it took and has not finished.
pub struct Lease<'q> {
    queue: &'q SegmentQueue,
    gpu: usize,
    held: Mutex<Vec<usize>>,
    busy: bool,
    /// Whether it has taken a segment yet.
    started: AtomicBool,
}

impl Lease<'_> {
    /// The GPU the worker is on.
    pub fn gpu(&self) -> usize {
        self.gpu
    }

    /// The next segment for this worker (none that failed on its GPU), without waiting.
    /// A worker that holds one already (opening the next ahead) leaves the pending segments
    /// to workers still loading, where there are no more than those: on a short job every
    /// worker, and every GPU, gets its share rather than the first loaded taking two.
    pub fn take(&self) -> Option<usize> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = self.queue.lock();
        let at = state.eligible(self.gpu)?;
        if !held.is_empty() && state.pending.len() <= state.unstarted {
            return None;
        }
        let index = state.pending.remove(at)?;
        if !self.started.swap(true, Ordering::Relaxed) {
            state.unstarted -= 1;
        }
        drop(state);
        held.push(index);
        Some(index)
    }

    /// Whether a segment is pending that this worker may take now.
    pub fn has_work(&self) -> bool {
        self.queue.lock().eligible(self.gpu).is_some()
    }

    /// Segment `index` is done: it leaves the worker's hands for good.
    pub fn finished(&self, index: usize) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&i| i != index);
        let mut state = self.queue.lock();
        if state.failed_on.contains_key(&index) {
            state.rerun.push((index, self.gpu));
        }
    }

    /// The worker's GPU failed with `error`. The segment it was upscaling (the first it
    /// holds: a worker runs its segments in the order it took them) is charged with the
    /// failure: put back first in line for a worker on another GPU, or given up once it
    /// has failed [`ATTEMPTS`] times. The others it holds (opened ahead, not yet at the
    /// model) go back uncharged, behind it. Returns the charged segment, whether it was put
    /// back, and the others.
    pub fn give_back(&self, error: &str) -> Option<GivenBack> {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
        let (&failed, others) = held.split_first()?;
        let mut state = self.queue.lock();
        state.failures.push(SegmentFailure {
            segment: failed,
            gpu: self.gpu,
            error: error.to_owned(),
        });
        let failed_on = state.failed_on.entry(failed).or_default();
        failed_on.push(self.gpu);
        let retried = failed_on.len() < ATTEMPTS;
        for &index in others.iter().rev() {
            state.pending.push_front(index);
        }
        match retried {
            true => state.pending.push_front(failed),
            false => state.given_up.push(failed),
        }
        drop(state);
        self.queue.changed.notify_all();
        Some(GivenBack {
            failed,
            retried,
            others: others.to_vec(),
        })
    }

    /// Wait, idle, until there is a segment this worker may take (true), or until none can
    /// come: no other worker is busy, so none can put one back, or `stop()` (false; the
    /// worker's part is then over).
    pub fn wait_for_work(&mut self, stop: &dyn Fn() -> bool) -> bool {
        let mut state = self.queue.lock();
        if self.busy {
            self.busy = false;
            state.busy -= 1;
            self.queue.changed.notify_all();
        }
        loop {
            if state.eligible(self.gpu).is_some() {
                state.busy += 1;
                self.busy = true;
                return true;
            }
            if state.busy == 0 || stop() {
                return false;
            }
            state = self
                .queue
                .changed
                .wait_timeout(state, IDLE_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Lease<'_> {
    /// The worker's part is over: what it still holds (a run that stopped) is left undone,
    /// and it no longer counts as busy.
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
        let mut state = self.queue.lock();
        state.given_up.extend(held);
        if self.busy {
            state.busy -= 1;
        }
        if !self.started.swap(true, Ordering::Relaxed) {
            state.unstarted -= 1;
        }
        drop(state);
        self.queue.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_go_out_in_order_and_a_failed_one_skips_its_gpu() {
        let queue = SegmentQueue::new(0..4, 2);
        let (on0, on1) = (queue.lease(0), queue.lease(1));
        assert_eq!(on1.take(), Some(0));
        assert_eq!(on1.take(), Some(1));
        on1.finished(0);
        let back = on1.give_back("CUDA error: lost").unwrap();
        assert_eq!((back.failed, back.retried, back.others), (1, true, vec![]));
        // Segment 1 is first in line, but not for GPU 1 again.
        assert_eq!(on1.take(), Some(2));
        assert_eq!(on0.take(), Some(1));
        on0.finished(1);
        on1.finished(2);
        assert_eq!(on0.take(), Some(3));
        on0.finished(3);
        drop((on0, on1));
        let out = queue.outcome();
        assert!(out.left.is_empty());
        assert_eq!(out.rerun, vec![(1, 0)]);
        assert_eq!(
            out.failures,
            vec![SegmentFailure {
                segment: 1,
                gpu: 1,
                error: "CUDA error: lost".into()
            }]
        );
    }

    #[test]
    fn a_segment_is_retried_once_then_given_up() {
        let queue = SegmentQueue::new([5], 3);
        let (a, b, c) = (queue.lease(0), queue.lease(1), queue.lease(2));
        assert_eq!(a.take(), Some(5));
        assert!(a.give_back("first").unwrap().retried);
        assert_eq!(a.take(), None, "not on the GPU it failed on");
        assert_eq!(b.take(), Some(5));
        assert!(!b.give_back("second").unwrap().retried);
        assert_eq!(c.take(), None, "failed twice: given up");
        drop((a, b, c));
        let out = queue.outcome();
        assert_eq!(out.left, vec![5]);
        assert_eq!(out.failures.len(), 2);
        assert!(out.rerun.is_empty());
    }

    #[test]
    fn only_the_segment_being_upscaled_is_charged_the_one_opened_ahead_goes_back_free() {
        let queue = SegmentQueue::new(0..5, 2);
        let (a, b) = (queue.lease(0), queue.lease(1));
        assert_eq!(a.take(), Some(0));
        assert_eq!(a.take(), Some(1));
        let back = a.give_back("x").unwrap();
        assert_eq!((back.failed, back.others), (0, vec![1]));
        assert_eq!(
            queue.lock().failures.len(),
            1,
            "segment 1 never reached the model"
        );
        // Both are first in line, in order; segment 1 may run on GPU 0 again.
        assert_eq!(a.take(), Some(1));
        assert_eq!((b.take(), b.take()), (Some(0), Some(2)));
        assert_eq!(a.give_back("y").unwrap().failed, 1);
        assert_eq!(
            b.take(),
            Some(1),
            "charged once on GPU 0: GPU 1 may take it"
        );
        assert!(a.give_back("nothing held").is_none());
    }

    #[test]
    fn what_a_stopped_worker_still_holds_is_left_not_lost() {
        let queue = SegmentQueue::new(0..3, 1);
        let a = queue.lease(0);
        assert_eq!(a.take(), Some(0));
        assert_eq!(a.take(), Some(1));
        a.finished(0);
        drop(a);
        assert_eq!(queue.outcome().left, vec![1, 2]);
    }

    #[test]
    fn an_idle_worker_waits_for_a_busy_one_that_may_put_a_segment_back() {
        let queue = SegmentQueue::new([0], 2);
        std::thread::scope(|s| {
            let mut idle = queue.lease(0);
            let busy = queue.lease(1);
            assert_eq!(busy.take(), Some(0));
            let waiter = s.spawn(move || {
                let woke = idle.wait_for_work(&|| false);
                (woke, idle.take())
            });
            std::thread::sleep(Duration::from_millis(150));
            assert!(
                !waiter.is_finished(),
                "a busy worker could still give one back"
            );
            busy.give_back("GPU 1 failed");
            drop(busy);
            assert_eq!(waiter.join().unwrap(), (true, Some(0)));
        });
    }

    #[test]
    fn idle_workers_end_when_no_busy_one_is_left() {
        let queue = SegmentQueue::new([0], 2);
        std::thread::scope(|s| {
            let mut a = queue.lease(0);
            let b = queue.lease(0);
            assert_eq!(b.take(), Some(0));
            let waiter = s.spawn(move || a.wait_for_work(&|| false));
            b.finished(0);
            drop(b);
            assert!(!waiter.join().unwrap());
        });
        // A segment no worker left may take stays in the queue: it is left, not lost.
        let queue = SegmentQueue::new([0], 2);
        let (a, mut b) = (queue.lease(0), queue.lease(0));
        assert_eq!(a.take(), Some(0));
        a.give_back("x");
        drop(a);
        assert!(!b.wait_for_work(&|| false), "no worker on another GPU");
        drop(b);
        assert_eq!(queue.outcome().left, vec![0]);
    }

    #[test]
    fn a_worker_does_not_open_ahead_what_a_worker_still_loading_would_take() {
        let queue = SegmentQueue::new(0..3, 3);
        let (a, b, c) = (queue.lease(0), queue.lease(1), queue.lease(1));
        assert_eq!(a.take(), Some(0));
        assert_eq!(a.take(), None, "two left for the two still loading");
        assert!(
            a.has_work(),
            "a pending segment it may take once its hands are free"
        );
        a.finished(0);
        assert_eq!(a.take(), Some(1), "nothing held: it takes the next");
        assert_eq!(b.take(), Some(2));
        assert_eq!(c.take(), None);
        assert!(!c.has_work());
        drop((a, b, c));
        assert_eq!(queue.outcome().left, vec![1, 2]);
        // A worker that ends without a segment (its model did not load) no longer counts.
        let queue = SegmentQueue::new(0..3, 2);
        let (a, b) = (queue.lease(0), queue.lease(1));
        assert_eq!(a.take(), Some(0));
        assert_eq!(a.take(), Some(1), "one left for the one loading");
        assert_eq!(a.take(), None);
        drop(b);
        assert_eq!(a.take(), Some(2));
    }

    #[test]
    fn a_stop_ends_the_wait() {
        let queue = SegmentQueue::new([0], 2);
        let (busy, mut idle) = (queue.lease(1), queue.lease(0));
        assert_eq!(busy.take(), Some(0));
        assert!(!idle.wait_for_work(&|| true));
    }
}
