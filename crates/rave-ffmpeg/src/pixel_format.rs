//! What FFmpeg's pixel-format descriptors say of a format: RGB or palette, alpha, depth,
//! 4:2:0 layout, name.

use ffmpeg_next::ffi;

/// The descriptor of `format`; `None` for a format FFmpeg does not know.
fn descriptor(format: ffi::AVPixelFormat) -> Option<&'static ffi::AVPixFmtDescriptor> {
    // SAFETY: av_pix_fmt_desc_get returns null or a pointer to a static descriptor, which
    // lives as long as the library.
    unsafe { ffi::av_pix_fmt_desc_get(format).as_ref() }
}

/// Whether a pixel format's descriptor has any of `flags` (`AV_PIX_FMT_FLAG_*`).
fn has_flag(format: ffi::AVPixelFormat, flags: i32) -> bool {
    descriptor(format).is_some_and(|d| d.flags & flags as u64 != 0)
}

/// Whether a pixel format holds RGB (packed or planar, or a palette of RGB colours) rather
/// than YUV or grey samples.
pub fn is_rgb(format: ffi::AVPixelFormat) -> bool {
    has_flag(format, ffi::AV_PIX_FMT_FLAG_RGB | ffi::AV_PIX_FMT_FLAG_PAL)
}

/// Whether a pixel format's samples index a palette (pal8).
pub fn is_paletted(format: ffi::AVPixelFormat) -> bool {
    has_flag(format, ffi::AV_PIX_FMT_FLAG_PAL)
}

/// Whether pixel format `format` has an alpha plane.
pub fn has_alpha(format: ffi::AVPixelFormat) -> bool {
    has_flag(format, ffi::AV_PIX_FMT_FLAG_ALPHA)
}

/// Bits per sample of the first component of a pixel format, if FFmpeg knows the format.
pub fn bit_depth(format: ffi::AVPixelFormat) -> Option<u8> {
    descriptor(format).map(|d| d.comp[0].depth as u8)
}

/// Whether a pixel format is YUV 4:2:0 with its three components (the layout NVDEC writes
/// and RAVE's GPU path reads); None for an unknown format.
pub fn is_yuv420(format: ffi::AVPixelFormat) -> Option<bool> {
    descriptor(format).map(|d| {
        let rgb = d.flags & ffi::AV_PIX_FMT_FLAG_RGB as u64 != 0;
        !rgb && d.nb_components >= 3 && d.log2_chroma_w == 1 && d.log2_chroma_h == 1
    })
}

/// FFmpeg's name of a pixel format ("yuv422p10le"), or "unknown".
pub fn name(format: ffi::AVPixelFormat) -> String {
    // SAFETY: av_get_pix_fmt_name returns null or a static NUL-terminated string.
    let name = unsafe { ffi::av_get_pix_fmt_name(format) };
    if name.is_null() {
        return "unknown".into();
    }
    // SAFETY: non-null and NUL-terminated, as above.
    unsafe { std::ffi::CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ffi::AVPixelFormat as F;

    #[test]
    fn descriptors_tell_rgb_palette_alpha_depth_and_layout() {
        assert!(is_rgb(F::AV_PIX_FMT_RGB24) && is_rgb(F::AV_PIX_FMT_PAL8));
        assert!(!is_rgb(F::AV_PIX_FMT_YUV420P) && !is_rgb(F::AV_PIX_FMT_GRAY8));
        assert!(is_paletted(F::AV_PIX_FMT_PAL8) && !is_paletted(F::AV_PIX_FMT_RGB24));
        assert!(has_alpha(F::AV_PIX_FMT_RGBA) && !has_alpha(F::AV_PIX_FMT_RGB24));
        assert_eq!(bit_depth(F::AV_PIX_FMT_YUV420P10LE), Some(10));
        assert_eq!(is_yuv420(F::AV_PIX_FMT_NV12), Some(true));
        assert_eq!(is_yuv420(F::AV_PIX_FMT_YUV422P), Some(false));
        assert_eq!(is_yuv420(F::AV_PIX_FMT_NONE), None);
        assert_eq!(name(F::AV_PIX_FMT_YUV422P10LE), "yuv422p10le");
        assert_eq!(name(F::AV_PIX_FMT_NONE), "unknown");
    }

    #[test]
    fn only_three_component_yuv_4_2_0_counts_as_what_nvdec_writes() {
        for format in [
            F::AV_PIX_FMT_YUV420P,
            F::AV_PIX_FMT_YUVJ420P,
            F::AV_PIX_FMT_NV12,
        ] {
            assert_eq!(is_yuv420(format), Some(true), "{}", name(format));
        }
        assert_eq!(is_yuv420(F::AV_PIX_FMT_YUV420P10LE), Some(true));
        for format in [
            F::AV_PIX_FMT_YUV422P10LE,
            F::AV_PIX_FMT_YUV444P,
            F::AV_PIX_FMT_GRAY8,
            F::AV_PIX_FMT_GBRP,
        ] {
            assert_eq!(is_yuv420(format), Some(false), "{}", name(format));
        }
        assert_eq!(is_yuv420(F::AV_PIX_FMT_NONE), None);
        assert_eq!(name(F::AV_PIX_FMT_YUV422P10LE), "yuv422p10le");
        assert_eq!(name(F::AV_PIX_FMT_NONE), "unknown");
    }
}
