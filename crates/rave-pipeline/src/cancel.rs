//! `CancelToken`: one flag every stage polls between frames, plus interrupters that cut
//! short a call already in flight (an inference run) the moment cancellation is asked.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

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
}

/// Shared cancellation state. Cloning shares it.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl CancelToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask every stage to stop, and interrupt in-flight work. The first reason sticks.
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
        if self.is_cancelled() {
            interrupter.interrupt();
        }
        self.0
            .interrupters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(interrupter);
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
}
