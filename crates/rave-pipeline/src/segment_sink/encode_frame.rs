//! What the encode stage receives: a frame in host memory (the software encoders), or one
//! already in an encoder's CUDA surface (NVENC: no host copy).

use rave_core::frame::{FrameMeta, HostYuvFrame};
use rave_ffmpeg::cuda_surfaces::CudaSurface;

/// A frame for the encoder.
pub enum EncodeFrame {
    /// YUV 4:2:0 in host memory.
    Host(HostYuvFrame),
    /// Written by the postprocess kernel into a surface of the encoder's pool.
    Surface {
        /// Identity of the frame.
        meta: FrameMeta,
        /// The surface.
        surface: CudaSurface,
    },
}

impl EncodeFrame {
    /// Identity of the frame.
    pub fn meta(&self) -> &FrameMeta {
        match self {
            EncodeFrame::Host(f) => &f.meta,
            EncodeFrame::Surface { meta, .. } => meta,
        }
    }
}

impl From<HostYuvFrame> for EncodeFrame {
    fn from(frame: HostYuvFrame) -> Self {
        EncodeFrame::Host(frame)
    }
}
