//! Moving pixels between FFmpeg frames and RAVE's host YUV 4:2:0 frames: direct plane
//! copies for yuv420p/yuv420p10le, swscale for every other decoder format (told the matrix
//! and range the rest of the pipeline uses, so RGB sources are converted as tagged).

use ffmpeg_next::format::Pixel;
use ffmpeg_next::frame::Video as VideoFrame;
use ffmpeg_next::software::scaling::{Context as Scaler, Flags};
use rave_core::color::{ColorInfo, ColorRange};
use rave_core::error::{EngineError, Result};
use rave_core::frame::YuvFrame;

use crate::color::{is_rgb, sws_matrix};

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
    color: ColorInfo,
    bit_depth: u8,
    scaler: Option<(OwnedScaler, Pixel, u32, u32)>,
    scratch: VideoFrame,
    /// Paletted frames become BGRA first (swscale turns a palette into YUV with BT.601
    /// whatever matrix it is told), then convert as RGB.
    unpalette: Option<(OwnedScaler, Pixel, u32, u32)>,
    unpaletted: VideoFrame,
}

impl FrameImporter {
    /// An importer producing frames of `color.bit_depth` (8 or 10) with `color`'s matrix and
    /// range: RGB is converted with them, other YUV layouts keep their range.
    pub fn new(color: ColorInfo) -> Self {
        Self {
            color,
            bit_depth: color.bit_depth,
            scaler: None,
            scratch: VideoFrame::empty(),
            unpalette: None,
            unpaletted: VideoFrame::empty(),
        }
    }

    /// Copy (converting if needed) a decoded frame.
    pub fn import(&mut self, frame: &VideoFrame) -> Result<YuvFrame> {
        if !crate::pixel_format::is_paletted(frame.format().into()) {
            return self.import_unpaletted(frame);
        }
        let (fmt, w, h) = (frame.format(), frame.width(), frame.height());
        let stale =
            !matches!(&self.unpalette, Some((_, f, sw, sh)) if *f == fmt && *sw == w && *sh == h);
        if stale {
            let scaler = Scaler::get(fmt, w, h, Pixel::BGRA, w, h, Flags::POINT).map_err(|e| {
                EngineError::Decode(format!("cannot convert pixel format {fmt:?}: {e}"))
            })?;
            self.unpalette = Some((OwnedScaler(scaler), fmt, w, h));
        }
        let (scaler, ..) = self.unpalette.as_mut().expect("scaler set above");
        let mut rgb = std::mem::replace(&mut self.unpaletted, VideoFrame::empty());
        scaler
            .0
            .run(frame, &mut rgb)
            .map_err(|e| EngineError::Decode(format!("pixel format conversion failed: {e}")))?;
        let imported = self.import_unpaletted(&rgb);
        self.unpaletted = rgb;
        imported
    }

    /// Copy (converting if needed) a decoded frame of a format without a palette.
    fn import_unpaletted(&mut self, frame: &VideoFrame) -> Result<YuvFrame> {
        let target = working_format(self.bit_depth);
        let (fmt, w, h) = (frame.format(), frame.width(), frame.height());
        let same_layout = fmt == target || (target == Pixel::YUV420P && fmt == Pixel::YUVJ420P);
        if same_layout {
            return Ok(copy_planes(frame, self.bit_depth));
        }
        let stale =
            !matches!(&self.scaler, Some((_, f, sw, sh)) if *f == fmt && *sw == w && *sh == h);
        if stale {
            let mut scaler = Scaler::get(
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
            // swscale would otherwise convert RGB with BT.601 into limited range and squeeze
            // full-range YUV (yuvj422p, ...) into limited, whatever the pipeline assumes.
            let full = self.color.range == ColorRange::Full;
            let rgb = is_rgb(fmt);
            let set = crate::sys::set_scaler_colorspace(
                &mut scaler,
                sws_matrix(self.color.matrix),
                rgb || full,
                full,
            );
            if !set && rgb {
                return Err(EngineError::Decode(format!(
                    "cannot convert pixel format {fmt:?} with the {:?} matrix",
                    self.color.matrix
                )));
            }
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
            let color = ColorInfo {
                matrix: rave_core::color::ColorMatrix::Bt709,
                range: ColorRange::Limited,
                bit_depth: depth,
            };
            let back = FrameImporter::new(color).import(&frame).unwrap();
            assert_eq!(back, img, "depth {depth}");
        }
    }

    /// One RGB pixel through the importer, as (Y, U, V).
    fn import_rgb(rgb: [u8; 3], color: ColorInfo) -> (u16, u16, u16) {
        crate::init();
        let mut frame = VideoFrame::new(Pixel::RGB24, 4, 4);
        let stride = frame.stride(0);
        for row in 0..4 {
            for x in 0..4 {
                frame.data_mut(0)[row * stride + 3 * x..][..3].copy_from_slice(&rgb);
            }
        }
        let yuv = FrameImporter::new(color).import(&frame).unwrap();
        (yuv.y[5], yuv.u[0], yuv.v[0])
    }

    #[test]
    fn rgb_is_converted_with_the_pipelines_matrix_and_range() {
        use rave_core::color::ColorMatrix;
        let limited = |matrix| ColorInfo {
            matrix,
            range: ColorRange::Limited,
            bit_depth: 8,
        };
        // Pure red: Y = 16 + 219 Kr, V = 128 + 112 (BT.709 Kr 0.2126, BT.601 0.299).
        let (y, _, v) = import_rgb([255, 0, 0], limited(ColorMatrix::Bt709));
        assert!(
            (y as i32 - 63).abs() <= 1 && (v as i32 - 240).abs() <= 1,
            "709: {y} {v}"
        );
        let (y, _, _) = import_rgb([255, 0, 0], limited(ColorMatrix::Bt601));
        assert!((y as i32 - 81).abs() <= 1, "601: {y}");
        let full = ColorInfo {
            matrix: ColorMatrix::Bt709,
            range: ColorRange::Full,
            bit_depth: 8,
        };
        let (y, u, v) = import_rgb([255, 255, 255], full);
        assert_eq!((y, u, v), (255, 128, 128));
        let (y, ..) = import_rgb([255, 255, 255], limited(ColorMatrix::Bt709));
        assert_eq!(y, 235);
    }
}
