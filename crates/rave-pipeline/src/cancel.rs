//! `CancelToken`: one flag every stage polls between frames, plus interrupters that cut
//! short a call already in flight (an inference run) the moment cancellation is asked. A
//! child token (one segment worker's) stops with its parent (the job's) but not the other
//! way round, so one worker's failure can stop its own stages only.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rave_core::backend::Interrupt;

/// Why the run is stopping early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The user pressed Ctrl+C (or the process got SIGTERM).
    User,
    /// A stage failed; the others should wind down.
    Failure,
}

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    reason: AtomicU8,
    interrupters: Mutex<Vec<Arc<dyn Interrupt>>>,
    children: Mutex<Vec<Weak<Inner>>>,
}

/// Shared cancellation state. Cloning shares it.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl CancelToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token that is cancelled, with the same reason, when this one is (at once if it
    /// already is); cancelling the child leaves this one alone.
    pub fn child(&self) -> Self {
        let child = Self::new();
        let mut children = self.0.children.lock().unwrap_or_else(|e| e.into_inner());
        children.retain(|c| c.strong_count() > 0);
        children.push(Arc::downgrade(&child.0));
        drop(children);
        // After the registration, so a cancel between the two is not missed (a second
        // cancel of the child is harmless: the first reason sticks).
        if let Some(reason) = self.reason() {
            child.cancel(reason);
        }
        child
    }

    /// Ask every stage to stop, and interrupt in-flight work (this token's and its
    /// children's). The first reason sticks.
    pub fn cancel(&self, reason: StopReason) {
        let code = match reason {
            StopReason::User => 1,
            StopReason::Failure => 2,
        };
        let _ = self
            .0
            .reason
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
        self.0.stopped.store(true, Ordering::SeqCst);
        let interrupters = self
            .0
            .interrupters
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for i in interrupters.iter() {
            i.interrupt();
        }
        drop(interrupters);
        // The children stop for this token's reason, whatever reason stuck here.
        let reason = self.reason().unwrap_or(reason);
        let children: Vec<Arc<Inner>> = {
            let mut children = self.0.children.lock().unwrap_or_else(|e| e.into_inner());
            children.retain(|c| c.strong_count() > 0);
            children.iter().filter_map(Weak::upgrade).collect()
        };
        for c in children {
            CancelToken(c).cancel(reason);
        }
    }

    /// Whether a stop was requested.
    pub fn is_cancelled(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Why the run is stopping, if it is.
    pub fn reason(&self) -> Option<StopReason> {
        match self.0.reason.load(Ordering::SeqCst) {
            1 => Some(StopReason::User),
            2 => Some(StopReason::Failure),
            _ => None,
        }
    }

    /// Register something to interrupt on cancellation (interrupted at once if already cancelled).
    pub fn on_cancel(&self, interrupter: Arc<dyn Interrupt>) {
        self.0
            .interrupters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(interrupter.clone());
        // After the registration: a cancel in between interrupts it twice, never not at all.
        if self.is_cancelled() {
            interrupter.interrupt();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Count(AtomicUsize);
    impl Interrupt for Count {
        fn interrupt(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn first_reason_sticks_and_interrupters_fire() {
        let t = CancelToken::new();
        let c = Arc::new(Count(AtomicUsize::new(0)));
        t.on_cancel(c.clone());
        assert!(!t.is_cancelled());
        t.cancel(StopReason::User);
        t.cancel(StopReason::Failure);
        assert_eq!(t.reason(), Some(StopReason::User));
        assert_eq!(c.0.load(Ordering::SeqCst), 2);
        let late = Arc::new(Count(AtomicUsize::new(0)));
        t.clone().on_cancel(late.clone());
        assert_eq!(late.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_child_stops_with_its_parent_but_not_the_other_way_round() {
        let job = CancelToken::new();
        let (a, b) = (job.child(), job.child());
        let in_a = Arc::new(Count(AtomicUsize::new(0)));
        a.on_cancel(in_a.clone());
        a.cancel(StopReason::Failure);
        assert_eq!(a.reason(), Some(StopReason::Failure));
        assert!(!job.is_cancelled(), "a worker's failure is its own");
        assert!(!b.is_cancelled(), "and not its siblings'");
        job.cancel(StopReason::User);
        assert_eq!(b.reason(), Some(StopReason::User), "the parent's reason");
        assert_eq!(
            a.reason(),
            Some(StopReason::Failure),
            "the first reason sticks"
        );
        assert_eq!(in_a.0.load(Ordering::SeqCst), 2, "interrupted again");
        let late = job.child();
        assert_eq!(late.reason(), Some(StopReason::User), "born cancelled");
        let grandchild = b.child();
        assert_eq!(grandchild.reason(), Some(StopReason::User));
    }
}
