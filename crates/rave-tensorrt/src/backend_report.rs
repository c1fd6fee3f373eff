//! What the GPU backend reports at the end of a run: the provider it ran on and why, how
//! frames reached the model (zero-copy or staged), inference and ring metrics, and the
//! counters of the debug guards.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rave_core::backend::ModelMetadata;
use rave_core::metrics::StageSnapshot;
use rave_core::types::PixelFormat;
use serde::Serialize;

use crate::ep_options::Precision;
use crate::ep_policy::EpPolicy;
use crate::gpu_backend::GpuBackendConfig;
use crate::output_ring::RingMetricsSnapshot;
use crate::provider_paths::ProviderKind;

/// Counters the backend keeps while it runs.
#[derive(Debug, Default)]
pub struct Counters {
    audit_mismatches: AtomicU64,
    host_allocations: AtomicU64,
    batches: AtomicU64,
    batched_frames: AtomicU64,
    final_ring: Mutex<Option<(RingMetricsSnapshot, usize)>>,
}

impl Counters {
    /// One pointer-audit mismatch.
    pub fn audit_mismatch(&self) {
        self.audit_mismatches.fetch_add(1, Ordering::Relaxed);
    }

    /// Host allocations seen inside `process` (debug-alloc guard).
    pub fn host_allocations(&self, n: u64) {
        self.host_allocations.fetch_add(n, Ordering::Relaxed);
    }

    /// One staged run of `frames` frames.
    pub fn batch(&self, frames: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batched_frames
            .fetch_add(frames as u64, Ordering::Relaxed);
    }

    /// Keep the ring's last metrics (the ring itself goes at shutdown).
    pub fn keep_ring(&self, ring: (RingMetricsSnapshot, usize)) {
        *self.final_ring.lock().unwrap_or_else(|e| e.into_inner()) = Some(ring);
    }
}

/// The ring's state in the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RingReport {
    /// Slots.
    pub slots: usize,
    /// Counters.
    #[serde(flatten)]
    pub metrics: RingMetricsSnapshot,
}

/// The GPU backend's part of the run report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuBackendReport {
    /// Policy asked for.
    pub policy: EpPolicy,
    /// Provider that ran (None before initialization).
    pub provider: Option<&'static str>,
    /// Why `auto` left TensorRT, when it did.
    pub fallback_reason: Option<String>,
    /// TensorRT kernel precision asked for (fp32, fp16, int8).
    pub trt_precision: &'static str,
    /// Tensor format the model takes and returns.
    pub tensor_format: Option<PixelFormat>,
    /// Largest micro-batch.
    pub max_batch: usize,
    /// CUDA graphs captured and replayed.
    pub cuda_graph: bool,
    /// How frames reach the model: zero_copy (texture bound in place) or staged.
    pub binding: &'static str,
    /// Device-to-device copies per frame made by the backend (0 zero-copy, 2 staged).
    pub device_copies_per_frame: u32,
    /// Inference time per frame.
    pub inference: StageSnapshot,
    /// Staged runs (batches) and the mean frames per run.
    pub batches: u64,
    /// Mean frames per staged run.
    pub mean_batch: f64,
    /// Output ring.
    pub ring: Option<RingReport>,
    /// Pointer-audit mismatches (a hidden copy by the runtime); must be 0.
    pub audit_mismatches: u64,
    /// Host allocations inside `process` after warm-up; counted only in debug-alloc builds.
    pub host_allocations: Option<u64>,
}

impl GpuBackendReport {
    /// Assemble the report.
    pub fn new(
        config: &GpuBackendConfig,
        provider: Option<ProviderKind>,
        fallback: Option<&str>,
        meta: Option<&ModelMetadata>,
        inference: StageSnapshot,
        live_ring: Option<(RingMetricsSnapshot, usize)>,
        counters: &Counters,
    ) -> Self {
        let staged = config.staged();
        let batches = counters.batches.load(Ordering::Relaxed);
        let batched = counters.batched_frames.load(Ordering::Relaxed);
        let ring = live_ring
            .or_else(|| {
                *counters
                    .final_ring
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
            })
            .map(|(metrics, slots)| RingReport { slots, metrics });
        Self {
            policy: config.policy,
            provider: provider.map(ProviderKind::label),
            fallback_reason: fallback.map(str::to_string),
            trt_precision: match config.precision {
                Precision::Fp32 => "fp32",
                Precision::Fp16 => "fp16",
                Precision::Int8 { .. } => "int8",
            },
            tensor_format: meta.map(|m| m.tensor_format),
            max_batch: config.batch.max_batch,
            cuda_graph: config.cuda_graph,
            binding: if staged { "staged" } else { "zero_copy" },
            device_copies_per_frame: if staged { 2 } else { 0 },
            inference,
            batches,
            mean_batch: if batches > 0 {
                batched as f64 / batches as f64
            } else {
                0.0
            },
            ring,
            audit_mismatches: counters.audit_mismatches.load(Ordering::Relaxed),
            host_allocations: cfg!(feature = "debug-alloc")
                .then(|| counters.host_allocations.load(Ordering::Relaxed)),
        }
    }
}
