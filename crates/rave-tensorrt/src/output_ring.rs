//! `OutputRing`: pre-allocated inference output buffers handed out in turn. A slot is only
//! reused once every downstream holder has dropped it (`Arc` strong count 1); otherwise the
//! acquire fails and counts a contention. The ring reallocates when the frame size changes,
//! but only while no slot is held. Generic over the slot type so the logic is tested without
//! a GPU.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rave_core::error::{EngineError, Result};
use serde::Serialize;

/// Counters of a ring's traffic.
#[derive(Debug, Default)]
pub struct RingMetrics {
    reuse: AtomicU64,
    contention: AtomicU64,
    first_use: AtomicU64,
    reallocations: AtomicU64,
}

/// A copy of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RingMetricsSnapshot {
    /// Acquisitions of a slot used before.
    pub reuse: u64,
    /// Acquisitions refused because downstream still held the slot.
    pub contention: u64,
    /// First use of each slot.
    pub first_use: u64,
    /// Reallocations after a frame-size change.
    pub reallocations: u64,
}

impl RingMetrics {
    /// Read the counters.
    pub fn snapshot(&self) -> RingMetricsSnapshot {
        RingMetricsSnapshot {
            reuse: self.reuse.load(Ordering::Relaxed),
            contention: self.contention.load(Ordering::Relaxed),
            first_use: self.first_use.load(Ordering::Relaxed),
            reallocations: self.reallocations.load(Ordering::Relaxed),
        }
    }
}

/// A fixed number of output slots of one size.
pub struct OutputRing<S> {
    slots: Vec<Arc<S>>,
    used: Vec<bool>,
    cursor: usize,
    slot_bytes: usize,
    dims: (u32, u32),
    metrics: RingMetrics,
}

impl<S> OutputRing<S> {
    /// Allocate `count` slots of `slot_bytes` for inputs of `dims`; `count` must be at least
    /// `downstream_capacity + 2` (every frame downstream may hold one, plus one being written
    /// and one being read).
    pub fn new(
        count: usize,
        downstream_capacity: usize,
        dims: (u32, u32),
        slot_bytes: usize,
        mut allocate: impl FnMut(usize) -> Result<S>,
    ) -> Result<Self> {
        let min = downstream_capacity + 2;
        if count < min {
            return Err(EngineError::Config(format!(
                "output ring of {count} slots is too small: it needs at least downstream capacity + 2 = {min}"
            )));
        }
        let slots = (0..count)
            .map(|_| allocate(slot_bytes).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            used: vec![false; count],
            slots,
            cursor: 0,
            slot_bytes,
            dims,
            metrics: RingMetrics::default(),
        })
    }

    /// The next slot, if downstream has released it.
    pub fn acquire(&mut self) -> Result<Arc<S>> {
        self.acquire_with(|_| Ok(()))
    }

    /// The next slot, if downstream has released it, after `write` filled it through a
    /// mutable reference (the ring holds the only reference then, so nothing can read it
    /// while it is written).
    pub fn acquire_with(&mut self, write: impl FnOnce(&mut S) -> Result<()>) -> Result<Arc<S>> {
        let slot = &mut self.slots[self.cursor];
        if Arc::strong_count(slot) != 1 {
            self.metrics.contention.fetch_add(1, Ordering::Relaxed);
            return Err(EngineError::InvariantViolation(format!(
                "output ring slot {} is still held downstream; the ring needs more slots than downstream holds frames",
                self.cursor
            )));
        }
        let unique = Arc::get_mut(slot).ok_or_else(|| {
            EngineError::InvariantViolation("output ring slot shared by a weak reference".into())
        })?;
        write(unique)?;
        if std::mem::replace(&mut self.used[self.cursor], true) {
            self.metrics.reuse.fetch_add(1, Ordering::Relaxed);
        } else {
            self.metrics.first_use.fetch_add(1, Ordering::Relaxed);
        }
        let out = Arc::clone(&self.slots[self.cursor]);
        self.cursor = (self.cursor + 1) % self.slots.len();
        Ok(out)
    }

    /// Whether frames of `dims` need differently sized slots.
    pub fn needs_realloc(&self, dims: (u32, u32)) -> bool {
        self.dims != dims
    }

    /// Replace every slot with one of `slot_bytes` for `dims`; refused while any is held.
    /// Returns the bytes of the freed slots (for VRAM accounting).
    pub fn reallocate(
        &mut self,
        dims: (u32, u32),
        slot_bytes: usize,
        mut allocate: impl FnMut(usize) -> Result<S>,
    ) -> Result<usize> {
        if let Some(i) = self.slots.iter().position(|s| Arc::strong_count(s) != 1) {
            return Err(EngineError::DimensionMismatch(format!(
                "frame size changed to {}x{} while output ring slot {i} is still held",
                dims.0, dims.1
            )));
        }
        let freed = self.slot_bytes * self.slots.len();
        let count = self.slots.len();
        self.slots.clear();
        self.slots = (0..count)
            .map(|_| allocate(slot_bytes).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        self.used = vec![false; count];
        self.cursor = 0;
        self.slot_bytes = slot_bytes;
        self.dims = dims;
        self.metrics.reallocations.fetch_add(1, Ordering::Relaxed);
        Ok(freed)
    }

    /// Bytes per slot.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the ring has no slots (never, once built).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The ring's counters.
    pub fn metrics(&self) -> RingMetricsSnapshot {
        self.metrics.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(count: usize) -> Result<OutputRing<Vec<u8>>> {
        OutputRing::new(count, 2, (4, 4), 16, |n| Ok(vec![0; n]))
    }

    #[test]
    fn size_must_exceed_downstream_capacity_by_two() {
        assert!(ring(3).is_err());
        assert_eq!(ring(4).unwrap().len(), 4);
    }

    #[test]
    fn slots_rotate_and_a_held_slot_is_contention() {
        let mut r = ring(4).unwrap();
        let held: Vec<_> = (0..4).map(|_| r.acquire().unwrap()).collect();
        assert!(r.acquire().is_err(), "slot 0 still held");
        drop(held);
        let a = r.acquire().unwrap();
        let m = r.metrics();
        assert_eq!((m.first_use, m.reuse, m.contention), (4, 1, 1));
        drop(a);
    }

    #[test]
    fn a_slot_is_written_through_the_rings_only_reference_before_it_is_handed_out() {
        let mut r = ring(4).unwrap();
        let a = r
            .acquire_with(|s| {
                s[0] = 7;
                Ok(())
            })
            .unwrap();
        assert_eq!(a[0], 7);
        // A failed write hands nothing out and does not advance the ring.
        let failed = r.acquire_with(|_| Err(EngineError::Inference("kernel failed".into())));
        assert!(failed.is_err());
        let b = r
            .acquire_with(|s| {
                s[0] = 9;
                Ok(())
            })
            .unwrap();
        assert_eq!((a[0], b[0]), (7, 9));
        let m = r.metrics();
        assert_eq!((m.first_use, m.reuse), (2, 0));
    }

    #[test]
    fn reallocation_waits_for_every_slot_and_reports_freed_bytes() {
        let mut r = ring(4).unwrap();
        assert!(!r.needs_realloc((4, 4)));
        assert!(r.needs_realloc((8, 8)));
        let held = r.acquire().unwrap();
        assert!(r.reallocate((8, 8), 64, |n| Ok(vec![0; n])).is_err());
        drop(held);
        assert_eq!(
            r.reallocate((8, 8), 64, |n| Ok(vec![0; n])).unwrap(),
            4 * 16
        );
        assert_eq!(r.slot_bytes(), 64);
        assert_eq!(r.acquire().unwrap().len(), 64);
        assert_eq!(r.metrics().reallocations, 1);
    }
}
