//! Micro-batching: the configuration, its check against the model, and the collector that
//! groups frames until the batch is full or the latency deadline since its first frame passes.
//! Frames leave in the order they came.

use std::time::{Duration, Instant};

use crate::backend::ModelMetadata;
use crate::error::{EngineError, Result};

/// How many frames one inference may take, and how long the first may wait for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// Largest batch (1 = no batching).
    pub max_batch: usize,
    /// Longest wait, from a batch's first frame, before it runs unfilled.
    pub latency_deadline: Duration,
}

impl Default for Batching {
    fn default() -> Self {
        Self {
            max_batch: 1,
            latency_deadline: Duration::from_micros(8_000),
        }
    }
}

impl Batching {
    /// Check the configuration against the model: batching needs a dynamic batch axis.
    pub fn validate(&self, meta: &ModelMetadata, model: &std::path::Path) -> Result<()> {
        if self.max_batch == 0 {
            return Err(EngineError::Config(
                "--max-batch 0: a batch holds at least one frame".into(),
            ));
        }
        match meta.fixed_batch {
            Some(fixed) if fixed as usize != self.max_batch => Err(EngineError::Config(format!(
                "--max-batch {}: {} has a fixed batch size of {fixed}; use --max-batch {fixed}, or a model exported with a dynamic batch axis",
                self.max_batch,
                model.display()
            ))),
            _ => Ok(()),
        }
    }
}

impl Batching {
    /// Check that one call of `frames` frames fits: at most `max_batch` (the stages collect
    /// no more, so more is a bug of the caller).
    pub fn admits(&self, frames: usize) -> Result<()> {
        if frames > self.max_batch {
            return Err(EngineError::InvariantViolation(format!(
                "a call of {frames} frames to a backend that takes at most {}",
                self.max_batch
            )));
        }
        Ok(())
    }
}

/// Groups items into batches of at most `max_batch`.
#[derive(Debug)]
pub struct BatchCollector<T> {
    config: Batching,
    items: Vec<T>,
    first_at: Option<Instant>,
}

impl<T> BatchCollector<T> {
    /// An empty collector.
    pub fn new(config: Batching) -> Self {
        Self {
            items: Vec::with_capacity(config.max_batch),
            config,
            first_at: None,
        }
    }

    /// Add an item that arrived at `now`; returns the batch when this filled it.
    pub fn push(&mut self, item: T, now: Instant) -> Option<Vec<T>> {
        if self.items.is_empty() {
            self.first_at = Some(now);
        }
        self.items.push(item);
        (self.items.len() >= self.config.max_batch).then(|| self.take())
    }

    /// How long the pending batch may still wait (`None` when nothing is pending).
    pub fn time_left(&self, now: Instant) -> Option<Duration> {
        self.first_at.map(|t| {
            self.config
                .latency_deadline
                .saturating_sub(now.saturating_duration_since(t))
        })
    }

    /// The pending batch if its deadline has passed at `now`.
    pub fn take_if_due(&mut self, now: Instant) -> Option<Vec<T>> {
        (self.time_left(now) == Some(Duration::ZERO)).then(|| self.take())
    }

    /// Whatever is pending (at the end of the stream).
    pub fn flush(&mut self) -> Option<Vec<T>> {
        (!self.items.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> Vec<T> {
        self.first_at = None;
        std::mem::replace(&mut self.items, Vec::with_capacity(self.config.max_batch))
    }
}

/// The frame range a failed batch covered, for its error message.
pub fn describe_frames(first: u64, count: usize) -> String {
    match count {
        0 | 1 => format!("frame {first}"),
        n => format!("frames {first}-{}", first + n as u64 - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PixelFormat;

    fn collector(max_batch: usize, deadline_ms: u64) -> BatchCollector<u32> {
        BatchCollector::new(Batching {
            max_batch,
            latency_deadline: Duration::from_millis(deadline_ms),
        })
    }

    #[test]
    fn a_full_batch_leaves_at_once_in_order() {
        let mut c = collector(3, 100);
        let t = Instant::now();
        assert_eq!(c.push(1, t), None);
        assert_eq!(c.push(2, t), None);
        assert_eq!(c.push(3, t), Some(vec![1, 2, 3]));
        assert_eq!(c.time_left(t), None, "nothing pending after a full batch");
        assert_eq!(c.push(4, t), None);
        assert_eq!(c.flush(), Some(vec![4]));
        assert_eq!(c.flush(), None);
    }

    #[test]
    fn the_deadline_counts_from_the_first_frame() {
        let mut c = collector(4, 10);
        let t0 = Instant::now();
        c.push(1, t0);
        c.push(2, t0 + Duration::from_millis(6));
        assert_eq!(
            c.time_left(t0 + Duration::from_millis(6)),
            Some(Duration::from_millis(4))
        );
        assert_eq!(c.take_if_due(t0 + Duration::from_millis(9)), None);
        assert_eq!(
            c.take_if_due(t0 + Duration::from_millis(10)),
            Some(vec![1, 2])
        );
        // A new batch starts its own clock.
        c.push(3, t0 + Duration::from_millis(30));
        assert_eq!(c.take_if_due(t0 + Duration::from_millis(35)), None);
    }

    #[test]
    fn batch_of_one_passes_every_frame_straight_through() {
        let mut c = collector(1, 0);
        let t = Instant::now();
        assert_eq!(c.push(7, t), Some(vec![7]));
        assert_eq!(c.push(8, t), Some(vec![8]));
    }

    fn meta(fixed_batch: Option<u32>) -> ModelMetadata {
        ModelMetadata {
            name: "m".into(),
            scale: 2,
            input_name: "input".into(),
            output_name: "output".into(),
            input_channels: 3,
            min_input_hw: (1, 1),
            max_input_hw: (u32::MAX, u32::MAX),
            tensor_format: PixelFormat::RgbPlanarF32,
            fixed_batch,
            side_multiple: 1,
        }
    }

    #[test]
    fn batching_a_fixed_batch_one_model_is_a_config_error() {
        let cfg = Batching {
            max_batch: 4,
            latency_deadline: Duration::from_millis(8),
        };
        let path = std::path::Path::new("fixed.onnx");
        let err = cfg.validate(&meta(Some(1)), path).unwrap_err();
        assert!(err.to_string().contains("use --max-batch 1"), "{err}");
        assert_eq!(err.kind(), "config");
        assert!(err.to_string().contains("fixed batch size of 1"), "{err}");
        assert!(err.to_string().contains("fixed.onnx"), "{err}");
        cfg.validate(&meta(None), path).unwrap();
        Batching::default().validate(&meta(Some(1)), path).unwrap();
        let zero = Batching {
            max_batch: 0,
            ..cfg
        };
        assert!(zero.validate(&meta(None), path).is_err());
    }

    #[test]
    fn failed_batches_name_their_frames() {
        assert_eq!(describe_frames(12, 4), "frames 12-15");
        assert_eq!(describe_frames(3, 1), "frame 3");
    }
}
