//! Bounded channels between stages whose blocking calls give up promptly when the user
//! stops the run. After a failure they go on until the other side is gone: the stages
//! upstream of the failed one stop (their sends find it gone, and the inference stage
//! stops at the failure), the ones downstream finish what they hold, so a segment whose
//! frames had all passed the failed point is still finished and kept.

use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender};

use crate::cancel::{CancelToken, StopReason};

/// How often a blocked stage re-checks the cancel flag.
const POLL: Duration = Duration::from_millis(50);

/// Whether a blocked stage gives up now: the user stopped the run.
fn user_stopped(cancel: &CancelToken) -> bool {
    cancel.reason() == Some(StopReason::User)
}

/// Receive the next item; `None` at end of stream or when the user stopped the run.
pub fn recv<T>(rx: &Receiver<T>, cancel: &CancelToken) -> Option<T> {
    loop {
        if user_stopped(cancel) {
            return None;
        }
        match rx.recv_timeout(POLL) {
            Ok(v) => return Some(v),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Send an item, waiting for room; `false` when the receiver is gone or the user stopped
/// the run.
pub fn send<T>(tx: &Sender<T>, mut item: T, cancel: &CancelToken) -> bool {
    loop {
        if user_stopped(cancel) {
            return false;
        }
        match tx.send_timeout(item, POLL) {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(back)) => item = back,
            Err(SendTimeoutError::Disconnected(_)) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::StopReason;

    #[test]
    fn blocked_send_returns_on_cancel() {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let cancel = CancelToken::new();
        assert!(send(&tx, 1, &cancel));
        let c = cancel.clone();
        let t = std::thread::spawn(move || send(&tx, 2, &c));
        std::thread::sleep(Duration::from_millis(100));
        cancel.cancel(StopReason::User);
        assert!(!t.join().unwrap());
    }

    #[test]
    fn after_a_failure_what_is_queued_is_still_received_and_sends_end_with_the_receiver() {
        let (tx, rx) = crossbeam_channel::bounded(2);
        let cancel = CancelToken::new();
        assert!(send(&tx, 1, &cancel));
        assert!(send(&tx, 2, &cancel));
        cancel.cancel(StopReason::Failure);
        let c = cancel.clone();
        let blocked = std::thread::spawn(move || send(&tx, 3, &c));
        assert_eq!(recv(&rx, &cancel), Some(1), "drained downstream");
        assert_eq!(recv(&rx, &cancel), Some(2));
        assert_eq!(recv(&rx, &cancel), Some(3), "the blocked send went through");
        assert!(blocked.join().unwrap());
        assert_eq!(recv(&rx, &cancel), None, "the sender is gone");
        let (tx, rx) = crossbeam_channel::bounded(1);
        assert!(send(&tx, 1, &cancel));
        drop(rx);
        assert!(!send(&tx, 2, &cancel), "the receiver is gone");
    }

    #[test]
    fn recv_ends_when_sender_drops() {
        let (tx, rx) = crossbeam_channel::bounded::<u8>(1);
        drop(tx);
        assert_eq!(recv(&rx, &CancelToken::new()), None);
    }
}
