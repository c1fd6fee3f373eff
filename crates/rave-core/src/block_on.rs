//! Drive the backends' async calls from plain threads. The GPU backend's futures never wait
//! on anything (ONNX Runtime's run is synchronous inside), so polling them to completion on
//! the calling thread is all an executor would do.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// Run `future` to completion on this thread.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_futures_complete() {
        assert_eq!(block_on(async { 40 + 2 }), 42);
    }
}
