//! VRAM accounting: bytes RAVE holds on the device now and at peak, and an optional limit
//! enforced before allocating.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{EngineError, Result};

/// Current and peak device bytes held by RAVE, with an optional ceiling.
#[derive(Debug, Default)]
pub struct VramAccount {
    current: AtomicUsize,
    peak: AtomicUsize,
    limit: Option<usize>,
}

impl VramAccount {
    /// An account with an optional limit in bytes.
    pub fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            ..Default::default()
        }
    }

    /// Count `bytes` as held, or fail without counting them if that passes the limit.
    pub fn reserve(&self, bytes: usize) -> Result<()> {
        let mut cur = self.current.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(bytes);
            if let Some(limit) = self.limit.filter(|l| next > *l) {
                return Err(EngineError::VramLimit {
                    requested: bytes,
                    would_be: next,
                    limit,
                });
            }
            match self
                .current
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(next, Ordering::Relaxed);
                    return Ok(());
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Stop counting `bytes` (never below zero).
    pub fn release(&self, bytes: usize) {
        let _ = self
            .current
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                Some(c.saturating_sub(bytes))
            });
    }

    /// (current, peak) bytes.
    pub fn usage(&self) -> (usize, usize) {
        (
            self.current.load(Ordering::Relaxed),
            self.peak.load(Ordering::Relaxed),
        )
    }

    /// The configured limit.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_peak_and_enforces_limit() {
        let v = VramAccount::new(Some(100));
        v.reserve(60).unwrap();
        v.reserve(30).unwrap();
        let err = v.reserve(20).unwrap_err();
        assert_eq!(err.kind(), "vram_limit");
        assert_eq!(v.usage(), (90, 90));
        v.release(50);
        v.reserve(20).unwrap();
        assert_eq!(v.usage(), (60, 90));
        v.release(1_000);
        assert_eq!(v.usage().0, 0);
    }
}
