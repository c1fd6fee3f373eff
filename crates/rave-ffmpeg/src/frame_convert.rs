//! Moving pixels between FFmpeg frames and RAVE's host YUV 4:2:0 frames: direct plane
//! copies for yuv420p/yuv420p10le, swscale for every other decoder format.

use ffmpeg_next::format::Pixel;
use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::software::scaling::{Context as Scaler, Flags};
use rave_core::error::{EngineError, Result};
use rave_core::frame::YuvFrame;

/// The raw pixel-format int of codec parameters as FFmpeg's enum (NONE when out of range).
pub fn pixel_from_raw(format: i32) -> ffmpeg_next::ffi::AVPixelFormat {
    use ffmpeg_next::ffi::AVPixelFormat;
    if format < 0 || format >= AVPixelFormat::AV_PIX_FMT_NB as i32 {
        return AVPixelFormat::AV_PIX_FMT_NONE;
    }
    // SAFETY: AVPixelFormat is a C enum whose values are exactly 0..AV_PIX_FMT_NB, checked above.
    unsafe { std::mem::transmute::<i32, AVPixelFormat>(format) }
}

/// The planar 4:2:0 format RAVE works in for a given bit depth.
pub fn working_format(bit_depth: u8) -> Pixel {
    if bit_depth > 8 {
        Pixel::YUV420P10LE
    } else {
        Pixel::YUV420P
    }
}

/// A swscale context that may move to another thread.
struct OwnedScaler(Scaler);

// SAFETY: an SwsContext holds no thread-affine state; it is owned by one FrameImporter and
// only ever used through `&mut`, so moving it between threads is sound.
unsafe impl Send for OwnedScaler {}

/// Converts decoded frames of any format to RAVE's host YUV 4:2:0 frames.
pub struct FrameImporter {
    bit_depth: u8,
    scaler: Option<(OwnedScaler, Pixel, u32, u32)>,
    scratch: VideoFrame,
}

impl FrameImporter {
    /// An importer producing frames of `bit_depth` (8 or 10).
    pub fn new(bit_depth: u8) -> Self {
        Self {
            bit_depth,
            scaler: None,
            scratch: VideoFrame::empty(),
        }
    }

    /// Copy (converting if needed) a decoded frame.
    pub fn import(&mut self, frame: &VideoFrame) -> Result<YuvFrame> {
        let target = working_format(self.bit_depth);
        let (fmt, w, h) = (frame.format(), frame.width(), frame.height());
        let same_layout = fmt == target || (target == Pixel::YUV420P && fmt == Pixel::YUVJ420P);
        if same_layout {
            return Ok(copy_planes(frame, self.bit_depth));
        }
        let stale =
            !matches!(&self.scaler, Some((_, f, sw, sh)) if *f == fmt && *sw == w && *sh == h);
        if stale {
            let scaler = Scaler::get(
                fmt,
                w,
                h,
                target,
                w,
                h,
                Flags::BICUBIC | Flags::ACCURATE_RND | Flags::FULL_CHR_H_INT,
            )
            .map_err(|e| {
                EngineError::Decode(format!("cannot convert pixel format {fmt:?}: {e}"))
            })?;
            self.scaler = Some((OwnedScaler(scaler), fmt, w, h));
        }
        let (scaler, ..) = self.scaler.as_mut().expect("scaler set above");
        scaler
            .0
            .run(frame, &mut self.scratch)
            .map_err(|e| EngineError::Decode(format!("pixel format conversion failed: {e}")))?;
        Ok(copy_planes(&self.scratch, self.bit_depth))
    }
}

/// Copy the three planes of a yuv420p / yuv420p10le frame, honouring line strides.
fn copy_planes(frame: &VideoFrame, bit_depth: u8) -> YuvFrame {
    let mut out = YuvFrame::zeroed(frame.width(), frame.height(), bit_depth);
    let (cw, ch) = out.chroma_size();
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let wide = bit_depth > 8;
    for (plane, dst, pw, ph) in [
        (0usize, &mut out.y, w, h),
        (1, &mut out.u, cw, ch),
        (2, &mut out.v, cw, ch),
    ] {
        let stride = frame.stride(plane);
        let data = frame.data(plane);
        for row in 0..ph {
            let line = &data[row * stride..];
            let dst_row = &mut dst[row * pw..(row + 1) * pw];
            if wide {
                for (x, d) in dst_row.iter_mut().enumerate() {
                    *d = u16::from_le_bytes([line[2 * x], line[2 * x + 1]]);
                }
            } else {
                for (x, d) in dst_row.iter_mut().enumerate() {
                    *d = u16::from(line[x]);
                }
            }
        }
    }
    out
}

/// Write a host frame into an FFmpeg frame of the working format for its bit depth.
pub fn export(image: &YuvFrame, frame: &mut VideoFrame) {
    let (cw, ch) = image.chroma_size();
    let (w, h) = (image.width as usize, image.height as usize);
    let wide = image.bit_depth > 8;
    for (plane, src, pw, ph) in [
        (0usize, &image.y, w, h),
        (1, &image.u, cw, ch),
        (2, &image.v, cw, ch),
    ] {
        let stride = frame.stride(plane);
        let data = frame.data_mut(plane);
        for row in 0..ph {
            let line = &mut data[row * stride..];
            let src_row = &src[row * pw..(row + 1) * pw];
            if wide {
                for (x, s) in src_row.iter().enumerate() {
                    line[2 * x..2 * x + 2].copy_from_slice(&s.to_le_bytes());
                }
            } else {
                for (x, s) in src_row.iter().enumerate() {
                    line[x] = *s as u8;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_then_import_is_lossless_for_both_depths_and_odd_sizes() {
        crate::init();
        for depth in [8u8, 10] {
            let mut img = YuvFrame::zeroed(7, 5, depth);
            let max = (1u32 << depth) - 1;
            for (i, v) in img.y.iter_mut().enumerate() {
                *v = (i as u32 * 37 % max) as u16;
            }
            for (i, v) in img.u.iter_mut().enumerate() {
                *v = (i as u32 * 11 % max) as u16;
            }
            img.v
                .copy_from_slice(&img.u.iter().map(|x| max as u16 - x).collect::<Vec<_>>());
            let mut frame = VideoFrame::new(working_format(depth), 7, 5);
            export(&img, &mut frame);
            let back = FrameImporter::new(depth).import(&frame).unwrap();
            assert_eq!(back, img, "depth {depth}");
        }
    }
}
