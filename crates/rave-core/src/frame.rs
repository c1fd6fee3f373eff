//! Host-resident frames: planar YUV 4:2:0 samples and planar RGB float images, each tagged
//! with the frame's identity (index, timestamp, keyframe) that travels end to end.

use crate::error::{EngineError, Result};

/// Identity of a frame, carried unchanged from decode to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// 0-based position in decode order of output frames.
    pub index: u64,
    /// Presentation timestamp in the video stream's time base.
    pub pts: i64,
    /// Whether the decoder marked the frame as a keyframe.
    pub keyframe: bool,
}

/// A planar YUV 4:2:0 frame with samples widened to `u16` (8- or 10-bit values).
#[derive(Debug, Clone, PartialEq)]
pub struct YuvFrame {
    /// Luma width.
    pub width: u32,
    /// Luma height.
    pub height: u32,
    /// Significant bits per sample (8 or 10).
    pub bit_depth: u8,
    /// Luma, `width * height` samples, row-major.
    pub y: Vec<u16>,
    /// Cb, `chroma_width * chroma_height` samples.
    pub u: Vec<u16>,
    /// Cr, same size as `u`.
    pub v: Vec<u16>,
}

impl YuvFrame {
    /// A frame of the given size with every sample zero.
    pub fn zeroed(width: u32, height: u32, bit_depth: u8) -> Self {
        let (cw, ch) = chroma_size(width, height);
        Self {
            width,
            height,
            bit_depth,
            y: vec![0; width as usize * height as usize],
            u: vec![0; cw * ch],
            v: vec![0; cw * ch],
        }
    }

    /// Chroma plane width and height (rounded up for odd sizes).
    pub fn chroma_size(&self) -> (usize, usize) {
        chroma_size(self.width, self.height)
    }
}

/// Chroma plane size of a 4:2:0 frame of `width` x `height`.
pub fn chroma_size(width: u32, height: u32) -> (usize, usize) {
    (width.div_ceil(2) as usize, height.div_ceil(2) as usize)
}

/// A planar RGB image with `f32` samples in [0, 1]: the NCHW tensor layout models consume
/// (batch 1): all R, then all G, then all B.
#[derive(Debug, Clone, PartialEq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `3 * width * height` samples.
    pub data: Vec<f32>,
}

impl RgbImage {
    /// Wrap planar data, checking its length.
    pub fn new(width: u32, height: u32, data: Vec<f32>) -> Result<Self> {
        let expected = 3 * width as usize * height as usize;
        if data.len() != expected {
            return Err(EngineError::DimensionMismatch(format!(
                "RGB image {width}x{height} needs {expected} samples, got {}",
                data.len()
            )));
        }
        Ok(Self {
            width,
            height,
            data,
        })
    }

    /// Samples per plane.
    pub fn plane_len(&self) -> usize {
        self.width as usize * self.height as usize
    }
}

/// A decoded frame on the host, ready for preprocessing.
#[derive(Debug, Clone)]
pub struct HostYuvFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub image: YuvFrame,
}

/// An RGB frame on the host, before or after inference.
#[derive(Debug, Clone)]
pub struct HostRgbFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub image: RgbImage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_sizes_round_chroma_up() {
        let f = YuvFrame::zeroed(5, 3, 8);
        assert_eq!(f.chroma_size(), (3, 2));
        assert_eq!(f.u.len(), 6);
        assert!(RgbImage::new(2, 2, vec![0.0; 11]).is_err());
        assert!(RgbImage::new(2, 2, vec![0.0; 12]).is_ok());
    }
}
