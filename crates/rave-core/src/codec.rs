//! Stage traits for the ends of the pipeline: a source of decoded frames and a sink that
//! encodes and writes them. The FFmpeg crate implements both.

use crate::error::Result;
use crate::frame::HostYuvFrame;

/// Produces decoded frames in presentation order.
pub trait FrameSource: Send {
    /// The next frame, or `None` at end of stream.
    fn next_frame(&mut self) -> Result<Option<HostYuvFrame>>;
}

/// Consumes frames in order, encodes and writes them.
pub trait FrameSink: Send {
    /// Encode one frame.
    fn write_frame(&mut self, frame: HostYuvFrame) -> Result<()>;
    /// Flush the encoder and finalize the file so that it plays.
    fn finish(&mut self) -> Result<()>;
}
