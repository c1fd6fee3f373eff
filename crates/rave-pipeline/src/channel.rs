//! Bounded channels between stages whose blocking calls give up promptly on cancellation.

use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender};

use crate::cancel::CancelToken;

/// How often a blocked stage re-checks the cancel flag.
const POLL: Duration = Duration::from_millis(50);

/// Receive the next item; `None` at end of stream or on cancellation.
pub fn recv<T>(rx: &Receiver<T>, cancel: &CancelToken) -> Option<T> {
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        match rx.recv_timeout(POLL) {
            Ok(v) => return Some(v),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Send an item, waiting for room; `false` when the receiver is gone or on cancellation.
pub fn send<T>(tx: &Sender<T>, mut item: T, cancel: &CancelToken) -> bool {
    loop {
        if cancel.is_cancelled() {
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
    fn recv_ends_when_sender_drops() {
        let (tx, rx) = crossbeam_channel::bounded::<u8>(1);
        drop(tx);
        assert_eq!(recv(&rx, &CancelToken::new()), None);
    }
}
