//! `GpuTimer`: how long queued GPU work took, from timing events around it, read once the
//! work is done, so a stage that returns before the GPU finishes still reports GPU time.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use super::context::cuda_err;
use crate::error::Result;

/// Pairs of (start, end) events of queued work, oldest first. Room for
/// [`GpuTimer::RESERVED`] pairs is made up front, so timing a frame allocates nothing on the
/// host while its reader keeps up ([`GpuTimer::finished`] after each frame, as the
/// inference stage does: the frames in flight are bounded by the output ring; a tiled frame
/// times each of its tiles, and one of more tiles than that grows the queue once).
#[derive(Debug)]
pub struct GpuTimer {
    pending: Mutex<VecDeque<(CudaEvent, CudaEvent)>>,
}

impl Default for GpuTimer {
    fn default() -> Self {
        Self {
            pending: Mutex::new(VecDeque::with_capacity(Self::RESERVED)),
        }
    }
}

/// An event that can time (CUDA's default flags; cudarc's default disables timing).
fn timing_event(stream: &CudaStream) -> Result<CudaEvent> {
    stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda_err("recording a timing event"))
}

impl GpuTimer {
    /// The pairs of events held without allocating.
    pub const RESERVED: usize = 256;

    /// Mark the start of timed work on `stream` (give the result to [`GpuTimer::end`]).
    pub fn start(&self, stream: &CudaStream) -> Result<CudaEvent> {
        timing_event(stream)
    }

    /// Mark the end, on `stream`, of the work begun at `start`.
    pub fn end(&self, stream: &CudaStream, start: CudaEvent) -> Result<()> {
        let end = timing_event(stream)?;
        self.lock().push_back((start, end));
        Ok(())
    }

    /// The durations of the timed work that has finished, oldest first, without waiting
    /// (or, with `wait`, of all of it, waiting for the rest).
    pub fn finished(&self, wait: bool) -> Result<Vec<Duration>> {
        let mut pending = self.lock();
        let mut out = Vec::new();
        while let Some((start, end)) = pending.front() {
            let done = end
                .try_is_complete()
                .map_err(cuda_err("reading a timing event"))?;
            if !wait && !done {
                break;
            }
            // elapsed_ms waits for both events: at once when `end` is complete.
            let ms = start
                .elapsed_ms(end)
                .map_err(cuda_err("reading a timing event"))?;
            out.push(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3));
            pending.pop_front();
        }
        Ok(out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(CudaEvent, CudaEvent)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}
