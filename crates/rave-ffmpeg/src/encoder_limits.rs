//! The frame sizes each encoder can code, checked before any frame is processed: an
//! upscaled size outside them is refused with the sizes, the need and what to do.

use rave_core::error::{EngineError, Result};

use crate::codec_choice::VideoCodec;

/// The frame sizes an encoder opens with (4:2:0 input, as RAVE always sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeLimits {
    /// Width and height must be even. 4:2:0 chroma covers 2x2 luma pixels, and H.264/HEVC
    /// crop their coded size only in units of 2 luma pixels, so an odd size cannot be coded
    /// (SVT-AV1 refuses it too).
    pub even: bool,
    /// Smallest width and height.
    pub min: (u32, u32),
    /// Largest width and height, where the encoder has a fixed limit.
    pub max: Option<(u32, u32)>,
    /// Widths (inclusive range) the encoder opens with but crashes on.
    pub broken_widths: Option<(u32, u32)>,
    /// `(short, long)`: where one side is under `short` px, the other at most `long` px.
    pub narrow_strip: Option<(u32, u32)>,
}

impl SizeLimits {
    /// The limits of `codec`'s encoder, as measured on this FFmpeg (5.1): libx264 refuses
    /// above 16384 ("invalid width x height"); FFmpeg's libx265 wrapper refuses below 16
    /// ("Image size is too small"); SVT-AV1 1.4 needs 64..=16384 wide and 64..=8704 high.
    /// libx265 3.5 (Debian 12) corrupts its heap and aborts ("corrupted size vs. prev_size",
    /// or a segfault) on widths 34..=48, whose half-size lookahead is three 8x8 blocks wide,
    /// at any height and bit depth: `ffmpeg -f lavfi -i testsrc2=size=40x32 -c:v libx265`.
    /// It also refuses a strip under 32 px across and over 4208 px long, either way round
    /// ("non-conformant bitstreams not allowed": no HEVC level fits it; at preset ultrafast
    /// 4208x16, 16x4208 and 4300x32 open, 4210x16, 16x4210 and 4300x24 do not; slower presets
    /// open up to 4222 long, and the lower bound is the one held).
    pub fn of(codec: VideoCodec) -> Self {
        match codec {
            VideoCodec::H264 => Self {
                even: true,
                min: (2, 2),
                max: Some((16384, 16384)),
                broken_widths: None,
                narrow_strip: None,
            },
            VideoCodec::Hevc => Self {
                even: true,
                min: (16, 16),
                max: None,
                broken_widths: Some((34, 48)),
                narrow_strip: Some((32, 4208)),
            },
            VideoCodec::Av1 => Self {
                even: true,
                min: (64, 64),
                max: Some((16384, 8704)),
                broken_widths: None,
                narrow_strip: None,
            },
        }
    }

    /// Whether a `width` x `height` frame fits.
    pub fn accepts(self, width: u32, height: u32) -> bool {
        let even = !self.even || (width.is_multiple_of(2) && height.is_multiple_of(2));
        let big_enough = width >= self.min.0 && height >= self.min.1;
        let small_enough = self.max.is_none_or(|(w, h)| width <= w && height <= h);
        let safe = self
            .broken_widths
            .is_none_or(|(lo, hi)| !(lo..=hi).contains(&width));
        even && big_enough && small_enough && safe && !self.too_long_a_strip((width, height))
    }

    /// Whether a frame of `size` is a strip longer than the encoder codes (`narrow_strip`).
    fn too_long_a_strip(self, (width, height): (u32, u32)) -> bool {
        self.narrow_strip
            .is_some_and(|(short, long)| width.min(height) < short && width.max(height) > long)
    }

    /// "an even width and height of at least 64x64 and at most 16384x8704", for a frame of
    /// `size` (the strip rule is said only to a strip that breaks it).
    pub fn describe(self, size: (u32, u32)) -> String {
        let mut s = String::from(if self.even {
            "an even width and height"
        } else {
            "a width and height"
        });
        s += &format!(" of at least {}x{}", self.min.0, self.min.1);
        if let Some((w, h)) = self.max {
            s += &format!(" and at most {w}x{h}");
        }
        if let Some((lo, hi)) = self.broken_widths {
            s += &format!(", and a width outside {lo}..{hi} (this build crashes on those)");
        }
        if let Some((short, long)) = self.narrow_strip.filter(|_| self.too_long_a_strip(size)) {
            s += &format!(
                ", and with a side under {short} px the other at most {long} px (no level of the standard fits a longer strip)"
            );
        }
        s
    }
}

/// Refuse an upscaled size `codec`'s encoder cannot code (input `input`, model scale
/// `scale`), saying what it needs and what to do.
pub fn check_output_size(codec: VideoCodec, input: (u32, u32), scale: u32) -> Result<()> {
    let output = (input.0 * scale, input.1 * scale);
    let limits = SizeLimits::of(codec);
    if limits.accepts(output.0, output.1) {
        return Ok(());
    }
    Err(EngineError::OutputSizeUnsupported {
        encoder: codec.encoder_name().into(),
        input: [input.0, input.1],
        scale,
        output: [output.0, output.1],
        needs: limits.describe(output),
        advice: advice(codec, input, scale),
    })
}

/// What makes the size fit: cropping the input to an even size (an odd scale keeps odd
/// sizes odd), another codec whose encoder takes the size (or the cropped size), or another
/// scale.
fn advice(codec: VideoCodec, input: (u32, u32), scale: u32) -> String {
    let output = (input.0 * scale, input.1 * scale);
    let even = (input.0 & !1, input.1 & !1);
    let odd = !output.0.is_multiple_of(2) || !output.1.is_multiple_of(2);
    // Every stream kept (the data streams Matroska cannot hold aside), the video lossless.
    let crop = format!(
        "crop the input to {}x{} first (ffmpeg -i INPUT -map 0 -map -0:d? -c copy -c:v:0 ffv1 -filter:v:0 crop={}:{}:0:0 CROPPED.mkv)",
        even.0, even.1, even.0, even.1
    );
    let cropped_fits = |c: VideoCodec| {
        odd && even.0 > 0 && even.1 > 0 && SizeLimits::of(c).accepts(even.0 * scale, even.1 * scale)
    };
    let others = |fits: &dyn Fn(VideoCodec) -> bool| -> Vec<String> {
        VideoCodec::ALL
            .into_iter()
            .filter(|c| *c != codec && fits(*c))
            .map(|c| c.to_string())
            .collect()
    };
    let mut fixes = Vec::new();
    if cropped_fits(codec) {
        fixes.push(crop.clone());
    }
    let as_is = others(&|c| SizeLimits::of(c).accepts(output.0, output.1));
    if !as_is.is_empty() {
        fixes.push(format!("use --codec {}", as_is.join(" or ")));
    } else if fixes.is_empty() {
        let after_crop = others(&cropped_fits);
        if !after_crop.is_empty() {
            fixes.push(format!(
                "{crop} and use --codec {}",
                after_crop.join(" or ")
            ));
        }
    }
    if fixes.is_empty() {
        fixes.push(
            "use a model of another scale, or resize the input first (ffmpeg -vf scale=W:H)".into(),
        );
    }
    fixes.join(", or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_encoder_takes_what_it_can_code() {
        let h264 = SizeLimits::of(VideoCodec::H264);
        assert!(h264.accepts(2, 2) && h264.accepts(16384, 16384));
        assert!(!h264.accepts(51, 27) && !h264.accepts(16386, 16));
        let hevc = SizeLimits::of(VideoCodec::Hevc);
        assert!(hevc.accepts(16, 16) && !hevc.accepts(18, 10) && !hevc.accepts(51, 28));
        assert!(hevc.accepts(32, 24) && hevc.accepts(50, 24) && hevc.accepts(32, 48));
        assert!(!hevc.accepts(34, 24) && !hevc.accepts(48, 24) && !hevc.accepts(40, 512));
        assert!(hevc.accepts(4208, 16) && hevc.accepts(16, 4208) && hevc.accepts(4300, 32));
        assert!(!hevc.accepts(4210, 16) && !hevc.accepts(16, 4210) && !hevc.accepts(4300, 24));
        assert!(hevc.accepts(16384, 32) && !hevc.accepts(16388, 16));
        let needs = hevc.describe((16388, 16));
        assert!(
            needs.ends_with("and with a side under 32 px the other at most 4208 px (no level of the standard fits a longer strip)"),
            "{needs}"
        );
        let av1 = SizeLimits::of(VideoCodec::Av1);
        assert!(av1.accepts(64, 64) && av1.accepts(16384, 8704));
        assert!(!av1.accepts(62, 64) && !av1.accepts(66, 65) && !av1.accepts(64, 8706));
    }

    #[test]
    fn an_odd_size_is_refused_with_the_sizes_and_a_crop_that_fits() {
        let e = check_output_size(VideoCodec::H264, (17, 9), 3).unwrap_err();
        assert_eq!(e.family().exit_code(), 4);
        assert_eq!(
            e.to_string(),
            "17x9 upscaled x3 is 51x27, but libx264 needs an even width and height of at least 2x2 and at most 16384x16384; crop the input to 16x8 first (ffmpeg -i INPUT -map 0 -map -0:d? -c copy -c:v:0 ffv1 -filter:v:0 crop=16:8:0:0 CROPPED.mkv)"
        );
        assert!(check_output_size(VideoCodec::H264, (16, 8), 3).is_ok());
        assert!(check_output_size(VideoCodec::H264, (17, 9), 2).is_ok());
    }

    #[test]
    fn a_size_too_small_for_svt_av1_points_to_the_codecs_that_take_it() {
        let e = check_output_size(VideoCodec::Av1, (16, 12), 2).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("16x12 upscaled x2 is 32x24, but libsvtav1 needs an even width and height of at least 64x64 and at most 16384x8704; "), "{msg}");
        assert!(msg.ends_with("use --codec h264 or hevc"), "{msg}");
        let e = check_output_size(VideoCodec::Av1, (11, 9), 3).unwrap_err();
        assert!(
            e.to_string().ends_with("crop the input to 10x8 first (ffmpeg -i INPUT -map 0 -map -0:d? -c copy -c:v:0 ffv1 -filter:v:0 crop=10:8:0:0 CROPPED.mkv) and use --codec h264 or hevc"),
            "{e}"
        );
        let e = check_output_size(VideoCodec::H264, (9000, 100), 2).unwrap_err();
        assert!(e.to_string().ends_with("use --codec hevc"), "{e}");
        let e = check_output_size(VideoCodec::Hevc, (1, 1), 3).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "use a model of another scale, or resize the input first (ffmpeg -vf scale=W:H)"
            ),
            "{e}"
        );
    }

    #[test]
    fn widths_libx265_crashes_on_are_refused_with_the_codecs_that_take_them() {
        let e = check_output_size(VideoCodec::Hevc, (24, 12), 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "24x12 upscaled x2 is 48x24, but libx265 needs an even width and height of at least 16x16, and a width outside 34..48 (this build crashes on those); use --codec h264"
        );
        assert!(check_output_size(VideoCodec::Hevc, (16, 12), 2).is_ok());
        assert!(check_output_size(VideoCodec::Hevc, (25, 12), 2).is_ok());
    }
}
