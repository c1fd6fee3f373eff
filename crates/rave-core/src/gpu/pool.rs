//! `BucketPool`: free lists of device buffers keyed by size bucket, with hit, miss,
//! recycle and overflow counters. Generic over the buffer type so the bookkeeping is tested
//! without a GPU.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Buffers of at most this size round up to a power of two; larger ones to a multiple of it.
const LARGE_GRANULE: usize = 2 << 20;

/// Size of the bucket a request of `bytes` is served from.
pub fn bucket_size(bytes: usize) -> usize {
    let bytes = bytes.max(256);
    if bytes <= LARGE_GRANULE {
        bytes.next_power_of_two()
    } else {
        bytes.div_ceil(LARGE_GRANULE) * LARGE_GRANULE
    }
}

/// Counters of a pool's traffic.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PoolStats {
    /// Requests served from a free list.
    pub hits: u64,
    /// Requests that needed a new allocation.
    pub misses: u64,
    /// Buffers returned to a free list.
    pub recycles: u64,
    /// Buffers freed on return because their free list was full.
    pub overflows: u64,
}

impl PoolStats {
    /// Fraction of requests served from the pool (1.0 before any request).
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            1.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// Free lists by bucket size.
#[derive(Debug)]
pub struct BucketPool<B> {
    free: Mutex<HashMap<usize, VecDeque<B>>>,
    max_per_bucket: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    recycles: AtomicU64,
    overflows: AtomicU64,
    /// Requests since the last miss (for the steady-state flag).
    since_miss: AtomicU64,
}

impl<B> BucketPool<B> {
    /// A pool keeping at most `max_per_bucket` idle buffers of each size.
    pub fn new(max_per_bucket: usize) -> Self {
        Self {
            free: Mutex::new(HashMap::new()),
            max_per_bucket,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            recycles: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
            since_miss: AtomicU64::new(0),
        }
    }

    /// An idle buffer of `bucket` bytes, the one returned longest ago (its last users on the
    /// GPU the likeliest to be done: the newest would make its next writer wait for the work
    /// that just released it), counting a hit; `None` counts a miss (the caller allocates a
    /// new one).
    pub fn take(&self, bucket: usize) -> Option<B> {
        let found = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&bucket)
            .and_then(VecDeque::pop_front);
        if found.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            self.since_miss.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            self.since_miss.store(0, Ordering::Relaxed);
        }
        found
    }

    /// Return a buffer of `bucket` bytes. When its free list is full the buffer comes back
    /// to the caller to free (an overflow).
    pub fn give_back(&self, bucket: usize, buffer: B) -> Option<B> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let list = free.entry(bucket).or_default();
        if list.len() >= self.max_per_bucket {
            self.overflows.fetch_add(1, Ordering::Relaxed);
            return Some(buffer);
        }
        list.push_back(buffer);
        self.recycles.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Remove every idle buffer (to free them), returning them with their bucket sizes.
    pub fn drain(&self) -> Vec<(usize, B)> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.drain()
            .flat_map(|(bucket, list)| list.into_iter().map(move |b| (bucket, b)))
            .collect()
    }

    /// Bytes held idle in the free lists.
    pub fn idle_bytes(&self) -> usize {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.iter().map(|(bucket, list)| bucket * list.len()).sum()
    }

    /// Counters so far.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            recycles: self.recycles.load(Ordering::Relaxed),
            overflows: self.overflows.load(Ordering::Relaxed),
        }
    }

    /// Requests served since the last miss.
    pub fn requests_since_miss(&self) -> u64 {
        self.since_miss.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_small_to_powers_of_two_and_large_to_granules() {
        assert_eq!(bucket_size(1), 256);
        assert_eq!(bucket_size(1000), 1024);
        assert_eq!(bucket_size(LARGE_GRANULE), LARGE_GRANULE);
        assert_eq!(bucket_size(LARGE_GRANULE + 1), 2 * LARGE_GRANULE);
        // 1080p NV12 (3,110,400 bytes) wastes less than one granule.
        let b = bucket_size(3_110_400);
        assert!(b >= 3_110_400 && b - 3_110_400 < LARGE_GRANULE);
    }

    #[test]
    fn the_buffer_returned_longest_ago_is_taken_first() {
        let pool: BucketPool<&str> = BucketPool::new(4);
        pool.give_back(1024, "first");
        pool.give_back(1024, "second");
        assert_eq!(pool.take(1024), Some("first"));
        pool.give_back(1024, "third");
        assert_eq!(pool.take(1024), Some("second"));
        assert_eq!(pool.take(1024), Some("third"));
    }

    #[test]
    fn take_give_back_counts_hits_misses_recycles_overflows() {
        let pool: BucketPool<Vec<u8>> = BucketPool::new(2);
        assert!(pool.take(1024).is_none());
        assert!(pool.give_back(1024, vec![0; 1024]).is_none());
        assert!(pool.give_back(1024, vec![0; 1024]).is_none());
        assert!(
            pool.give_back(1024, vec![0; 1024]).is_some(),
            "third is an overflow"
        );
        assert_eq!(pool.idle_bytes(), 2048);
        assert!(pool.take(1024).is_some());
        assert!(pool.take(1024).is_some());
        assert!(pool.take(2048).is_none());
        let s = pool.stats();
        assert_eq!((s.hits, s.misses, s.recycles, s.overflows), (2, 2, 2, 1));
        assert_eq!(s.hit_rate(), 0.5);
        assert_eq!(pool.requests_since_miss(), 0);
        pool.give_back(1024, vec![]);
        assert_eq!(pool.drain().len(), 1);
        assert_eq!(pool.idle_bytes(), 0);
    }
}
