//! A failure injected on purpose (the CLI reads it from `RAVE_INJECT_FAILURE`): a worker's
//! inference fails like a GPU that broke, a CUDA error, after a number of frames. No GPU
//! fails on demand, so this is how a run's handling of one (the job stopped with its
//! finished segments kept; with several GPUs the segments run again on another) is tested.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rave_core::backend::{Interrupt, ModelMetadata, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::{EngineError, Result};

use crate::gpu_list::MAX_GPU_INDEX;

/// Where and when the injected failure strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFailure {
    /// Frames each affected worker upscales before its inference fails (and fails again on
    /// every later call).
    pub after_frames: u64,
    /// Only the workers on this GPU, never the CPU's (`None`: every worker, the CPU's too).
    pub gpu: Option<usize>,
}

impl InjectedFailure {
    /// `FRAMES` or `FRAMES@GPU`, e.g. `40@1`.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let (frames, gpu) = match text.trim().split_once('@') {
            Some((f, g)) => (f, Some(g)),
            None => (text.trim(), None),
        };
        let after_frames = frames.trim().parse().map_err(|_| {
            format!("'{frames}' is not a number of frames; use FRAMES or FRAMES@GPU, e.g. 40@1")
        })?;
        let gpu = match gpu {
            Some(g) => {
                let i: usize = g
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{g}' is not a GPU index; use FRAMES@GPU, e.g. 40@1"))?;
                if i > MAX_GPU_INDEX {
                    return Err(format!("GPU {i} is out of range; use 0 to {MAX_GPU_INDEX}"));
                }
                Some(i)
            }
            None => None,
        };
        Ok(Self { after_frames, gpu })
    }

    /// The frames after which a worker on `gpu` (`None`: on the CPU) fails, if it does.
    pub fn for_worker(&self, gpu: Option<usize>) -> Option<u64> {
        match self.gpu {
            None => Some(self.after_frames),
            Some(g) => (gpu == Some(g)).then_some(self.after_frames),
        }
    }
}

/// When a worker's injected failure strikes: after `frames` frames, counted in `done`
/// (the worker's own count, kept across its runs of the stages).
#[derive(Clone, Copy)]
pub struct FailAfter<'a> {
    /// Frames upscaled before the failure.
    pub frames: u64,
    /// Frames upscaled so far.
    pub done: &'a AtomicU64,
}

/// `inner`, failing once `after` says (never with `None`).
pub struct FailingUpscaler<'a, U: ?Sized> {
    inner: &'a U,
    after: Option<FailAfter<'a>>,
}

impl<'a, U: ?Sized> FailingUpscaler<'a, U> {
    /// Wrap `inner`.
    pub fn new(inner: &'a U, after: Option<FailAfter<'a>>) -> Self {
        Self { inner, after }
    }
}

impl<U: Upscaler + ?Sized> Upscaler for FailingUpscaler<'_, U> {
    type Frame = U::Frame;

    fn model(&self) -> Result<&ModelMetadata> {
        self.inner.model()
    }

    fn engine_name(&self) -> &str {
        self.inner.engine_name()
    }

    fn batching(&self) -> Batching {
        self.inner.batching()
    }

    fn upscale(&self, frames: &[Self::Frame]) -> Result<Vec<Self::Frame>> {
        if let Some(FailAfter {
            frames: after,
            done,
        }) = self.after
        {
            let before = done.fetch_add(frames.len() as u64, Ordering::Relaxed);
            if before + frames.len() as u64 > after {
                return Err(EngineError::Cuda(format!(
                    "a failure injected for testing, after {after} frames (RAVE_INJECT_FAILURE)"
                )));
            }
        }
        self.inner.upscale(frames)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        self.inner.interrupter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_frames_and_an_optional_gpu() {
        assert_eq!(
            InjectedFailure::parse("40@1"),
            Ok(InjectedFailure {
                after_frames: 40,
                gpu: Some(1)
            })
        );
        let any = InjectedFailure::parse(" 7 ").unwrap();
        assert_eq!(
            (any.for_worker(None), any.for_worker(Some(3))),
            (Some(7), Some(7))
        );
        let on1 = InjectedFailure::parse("5@1").unwrap();
        assert_eq!(on1.for_worker(Some(1)), Some(5));
        assert_eq!(on1.for_worker(Some(0)), None);
        assert_eq!(on1.for_worker(None), None, "not the CPU");
        assert!(
            InjectedFailure::parse("x")
                .unwrap_err()
                .contains("'x' is not a number")
        );
        assert!(
            InjectedFailure::parse("3@y")
                .unwrap_err()
                .contains("'y' is not a GPU")
        );
    }
}
