//! `HealthSnapshot`: one serialisable view of the GPU side of a run — VRAM, pool traffic,
//! queue depths and whether allocation has reached a steady state.

use serde::Serialize;

use super::pool::PoolStats;

/// Requests served from the pool in a row after which allocation counts as steady.
pub const STEADY_AFTER: u64 = 64;

/// The state of a `GpuContext` at one moment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HealthSnapshot {
    /// Device bytes held now (buffers in use plus idle in the pool).
    pub vram_current: usize,
    /// Most device bytes held at once.
    pub vram_peak: usize,
    /// Configured limit, if any.
    pub vram_limit: Option<usize>,
    /// Device bytes idle in the pool.
    pub pool_idle_bytes: usize,
    /// Pool counters.
    pub pool: PoolStats,
    /// Fraction of allocations the pool served.
    pub pool_hit_rate: f64,
    /// Frames waiting in each named queue, as last reported by the pipeline.
    pub queue_depths: Vec<(String, usize)>,
    /// True once the last `STEADY_AFTER` allocations were all served by the pool.
    pub steady_state: bool,
    /// The most of the device's memory in use beyond what it was when the context was made
    /// (everything the process took: RAVE's buffers, ONNX Runtime's arena, cuDNN, NVDEC;
    /// and any other process's meanwhile), sampled once a frame; `None` where the driver
    /// did not say.
    pub device_peak: Option<usize>,
}

impl HealthSnapshot {
    /// Assemble a snapshot.
    pub fn new(
        (vram_current, vram_peak): (usize, usize),
        vram_limit: Option<usize>,
        pool_idle_bytes: usize,
        pool: PoolStats,
        requests_since_miss: u64,
        queue_depths: Vec<(String, usize)>,
    ) -> Self {
        Self {
            vram_current,
            vram_peak,
            vram_limit,
            pool_idle_bytes,
            pool,
            pool_hit_rate: pool.hit_rate(),
            queue_depths,
            steady_state: requests_since_miss >= STEADY_AFTER,
            device_peak: None,
        }
    }

    /// The snapshot with the device-wide peak (see [`HealthSnapshot::device_peak`]).
    pub fn with_device_peak(mut self, peak: Option<usize>) -> Self {
        self.device_peak = peak;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_after_a_run_of_hits() {
        let pool = PoolStats {
            hits: 90,
            misses: 10,
            recycles: 95,
            overflows: 0,
        };
        let s = HealthSnapshot::new(
            (10, 20),
            None,
            5,
            pool,
            STEADY_AFTER,
            vec![("decode".into(), 3)],
        );
        assert!(s.steady_state);
        assert!((s.pool_hit_rate - 0.9).abs() < 1e-12);
        let s = HealthSnapshot::new((10, 20), None, 5, pool, STEADY_AFTER - 1, vec![]);
        assert!(!s.steady_state);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["vram_peak"], 20);
    }
}
