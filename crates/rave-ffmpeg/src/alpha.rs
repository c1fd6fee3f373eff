//! Whether the input's picture is transparent, which RAVE cannot keep (it upscales the
//! colour only) and says: a pixel format with alpha (ProRes 4444, QuickTime RLE, PNG),
//! WebM's `alpha_mode`. GIF (decoded as BGRA) and palette images have room for alpha in
//! every pixel or palette entry whether they use it or not; for them the first frame is
//! decoded and only transparent pixels count.

use ffmpeg_next::codec::Id;
use ffmpeg_next::ffi::AVPixelFormat;
use ffmpeg_next::format::context::Input;

use crate::sys;

/// What says that video stream `index` of `input` is transparent, in a few words for the
/// warning; `None` where nothing does.
pub(crate) fn alpha_of(input: &Input, index: usize) -> Option<String> {
    let params = sys::stream_params(input, index);
    let format = crate::frame_convert::pixel_from_raw(params.format);
    let name = crate::pixel_format::name(format);
    if format == AVPixelFormat::AV_PIX_FMT_PAL8 || Id::from(params.codec_id) == Id::GIF {
        let first =
            sys::input_path(input).and_then(|path| crate::first_frame::first_frame(&path, index));
        return match first.as_ref().and_then(first_frame_opaque) {
            Some(true) => None,
            Some(false) => Some(format!(
                "{name}, with transparent pixels in its first frame"
            )),
            None => Some(name),
        };
    }
    if crate::pixel_format::has_alpha(format) {
        return Some(name);
    }
    let stream = input.stream(index)?;
    (stream.metadata().get("alpha_mode") == Some("1")).then(|| "WebM alpha_mode".to_string())
}

/// Whether every pixel of a decoded frame is fully opaque, for the formats GIF and palette
/// images decode to; `None` for another format.
fn first_frame_opaque(frame: &ffmpeg_next::frame::Video) -> Option<bool> {
    let alpha_byte = match AVPixelFormat::from(frame.format()) {
        AVPixelFormat::AV_PIX_FMT_PAL8 => return Some(palette_is_opaque(frame)),
        AVPixelFormat::AV_PIX_FMT_BGRA | AVPixelFormat::AV_PIX_FMT_RGBA => 3,
        AVPixelFormat::AV_PIX_FMT_ARGB | AVPixelFormat::AV_PIX_FMT_ABGR => 0,
        _ => return None,
    };
    let width = frame.width() as usize;
    Some(rows(frame).all(|row| {
        row.chunks_exact(4)
            .take(width)
            .all(|pixel| pixel[alpha_byte] == 0xFF)
    }))
}

/// The first plane's rows, without their padding beyond the stride.
fn rows(frame: &ffmpeg_next::frame::Video) -> impl Iterator<Item = &[u8]> {
    frame
        .data(0)
        .chunks(frame.stride(0).max(1))
        .take(frame.height() as usize)
}

/// Whether every pixel of a PAL8 frame has a fully opaque colour: the palette is 256
/// entries of native-endian 0xAARRGGBB, and only the entries the pixels use count (a
/// decoder may leave unused ones zero, alpha included).
fn palette_is_opaque(frame: &ffmpeg_next::frame::Video) -> bool {
    let Some(palette) = sys::palette(frame) else {
        return false;
    };
    let opaque = |i: u8| {
        let e = &palette[4 * usize::from(i)..][..4];
        u32::from_ne_bytes([e[0], e[1], e[2], e[3]]) >> 24 == 0xFF
    };
    let width = frame.width() as usize;
    rows(frame).all(|row| row.iter().take(width).all(|&i| opaque(i)))
}
