//! The native engine for whichever architecture was recognised: one type for the backend
//! to hold, dispatching to [`CompactEngine`] or [`RrdbEngine`].

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, CudaView, CudaViewMut};

use super::{CompactEngine, GpuError, RrdbEngine};
use crate::network::Architecture;

/// A recognised network loaded on the GPU for one frame size.
pub enum NativeEngine {
    /// SRVGGNetCompact.
    Compact(Box<CompactEngine>),
    /// RRDBNet.
    Rrdb(Box<RrdbEngine>),
}

impl NativeEngine {
    /// Load `net` for frames of `height x width` on `stream`.
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: Arc<CudaStream>,
        net: &Architecture,
        size: (usize, usize),
    ) -> Result<Self, GpuError> {
        Ok(match net {
            Architecture::Compact(c) => {
                Self::Compact(Box::new(CompactEngine::new(ctx, stream, c, size)?))
            }
            Architecture::Rrdb(r) => Self::Rrdb(Box::new(RrdbEngine::new(ctx, stream, r, size)?)),
        })
    }

    /// Output size / input size.
    pub fn scale(&self) -> usize {
        match self {
            Self::Compact(e) => e.scale(),
            Self::Rrdb(e) => e.scale(),
        }
    }

    /// Queue the network over `input` (planar f32 `[3][h][w]`) into `output` (planar f32
    /// `[3][h * scale][w * scale]`) on the engine's stream.
    pub fn run<'v>(
        &mut self,
        input: &CudaView<'v, f32>,
        output: &mut CudaViewMut<'v, f32>,
    ) -> Result<(), GpuError> {
        match self {
            Self::Compact(e) => e.run(input, output),
            Self::Rrdb(e) => e.run(input, output),
        }
    }
}
