//! What the user chose for the output: video codec and its encoder, quality and speed
//! settings (validated per encoder), and the container implied by the file extension.

use std::fmt;
use std::path::Path;

use rave_core::error::{EngineError, Result};

/// Output video codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VideoCodec {
    /// H.264 through libx264.
    H264,
    /// HEVC through libx265.
    Hevc,
    /// AV1 through SVT-AV1.
    Av1,
}

impl VideoCodec {
    /// Every codec RAVE encodes.
    pub const ALL: [VideoCodec; 3] = [VideoCodec::H264, VideoCodec::Hevc, VideoCodec::Av1];

    /// The FFmpeg encoder that produces this codec.
    pub fn encoder_name(self) -> &'static str {
        match self {
            VideoCodec::H264 => "libx264",
            VideoCodec::Hevc => "libx265",
            VideoCodec::Av1 => "libsvtav1",
        }
    }

    /// NVIDIA's hardware encoder of this codec in FFmpeg.
    pub fn nvenc_encoder(self) -> &'static str {
        match self {
            VideoCodec::H264 => "h264_nvenc",
            VideoCodec::Hevc => "hevc_nvenc",
            VideoCodec::Av1 => "av1_nvenc",
        }
    }

    /// Default constant-rate-factor: visually transparent for upscaled content.
    pub fn default_crf(self) -> u32 {
        match self {
            VideoCodec::H264 => 18,
            VideoCodec::Hevc => 20,
            VideoCodec::Av1 => 28,
        }
    }

    /// Default speed preset.
    pub fn default_preset(self) -> &'static str {
        match self {
            VideoCodec::H264 | VideoCodec::Hevc => "medium",
            VideoCodec::Av1 => "8",
        }
    }

    /// Highest CRF the encoder accepts.
    pub fn max_crf(self) -> u32 {
        match self {
            VideoCodec::H264 | VideoCodec::Hevc => 51,
            VideoCodec::Av1 => 63,
        }
    }
}

impl fmt::Display for VideoCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VideoCodec::H264 => "h264",
            VideoCodec::Hevc => "hevc",
            VideoCodec::Av1 => "av1",
        })
    }
}

const X26X_PRESETS: [&str; 10] = [
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
    "placebo",
];

/// Validated encoder settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EncoderSettings {
    /// Codec to produce.
    pub codec: VideoCodec,
    /// Constant rate factor.
    pub crf: u32,
    /// Speed preset (x264/x265 names, SVT-AV1 numbers 0-13).
    pub preset: String,
    /// Software or NVENC (`--encoder`); the software encoder unless set.
    pub request: crate::encoder_choice::EncoderRequest,
    /// Threads a software encoder may use (`None`: its own choice, from every core); set
    /// where segment workers on several GPUs would otherwise oversubscribe the cores. Not
    /// a setting of the output (the same picture either way), so not in the report.
    #[serde(skip)]
    pub threads: Option<usize>,
}

impl EncoderSettings {
    /// Settings for NVENC (`--encoder nvenc`): `crf` on the codec's scale and `preset` one of
    /// NVENC's p1..p7 or a name `nvenc_settings::nvenc_preset` maps, checked.
    pub fn for_nvenc(codec: VideoCodec, crf: Option<u32>, preset: Option<&str>) -> Result<Self> {
        let nvenc = crate::nvenc_settings::NvencConfig::new(codec, crf, preset, 8, 1)?;
        Ok(Self {
            codec,
            crf: crf.unwrap_or(codec.default_crf()),
            preset: nvenc.preset.to_string(),
            request: crate::encoder_choice::EncoderRequest::Nvenc,
            threads: None,
        })
    }

    /// Check `crf` and `preset` against what the codec's encoder accepts, filling defaults.
    pub fn new(codec: VideoCodec, crf: Option<u32>, preset: Option<&str>) -> Result<Self> {
        let crf = crf.unwrap_or(codec.default_crf());
        if crf > codec.max_crf() {
            return Err(EngineError::Config(format!(
                "--crf {crf} is out of range for {codec}: use 0-{}",
                codec.max_crf()
            )));
        }
        let preset = preset
            .unwrap_or(codec.default_preset())
            .to_ascii_lowercase();
        let valid = match codec {
            VideoCodec::H264 | VideoCodec::Hevc => X26X_PRESETS.contains(&preset.as_str()),
            VideoCodec::Av1 => preset.parse::<u8>().is_ok_and(|p| p <= 13),
        };
        if !valid {
            let allowed = match codec {
                VideoCodec::Av1 => "0 (slowest) to 13 (fastest)".to_string(),
                _ => X26X_PRESETS.join(", "),
            };
            let hint = match crate::nvenc_settings::is_nvenc_own_preset(&preset) {
                true => " (p1..p7 are NVENC's presets: --encoder nvenc)",
                false => "",
            };
            return Err(EngineError::Config(format!(
                "--preset {:?} is not a {} preset: use {allowed}{hint}",
                preset,
                codec.encoder_name()
            )));
        }
        Ok(Self {
            codec,
            crf,
            preset,
            request: crate::encoder_choice::EncoderRequest::Software,
            threads: None,
        })
    }
}

/// Output container, from the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Container {
    /// MPEG-4 part 14 (.mp4, .m4v).
    Mp4,
    /// QuickTime (.mov).
    Mov,
    /// Matroska (.mkv).
    Matroska,
}

impl Container {
    /// Every container RAVE writes.
    pub const ALL: [Container; 3] = [Container::Mp4, Container::Mov, Container::Matroska];

    /// The container for `path`'s extension.
    pub fn from_path(path: &Path) -> Result<Self> {
        if let Some(container) = Self::of_extension(path) {
            return Ok(container);
        }
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "" => Err(EngineError::Config(format!(
                "{}: the output name has no extension; end it in .mp4, .mkv or .mov, or in '/' for an output folder",
                path.display(),
            ))),
            _ => Err(EngineError::Config(format!(
                "{}: unsupported output extension {:?}; use .mp4, .mkv or .mov",
                path.display(),
                ext
            ))),
        }
    }

    /// The container RAVE writes for `path`'s extension (`.mp4`/`.m4v`, `.mov`, `.mkv`, any
    /// case); `None` for another extension or none.
    pub fn of_extension(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "mp4" | "m4v" => Some(Container::Mp4),
            "mov" => Some(Container::Mov),
            "mkv" => Some(Container::Matroska),
            _ => None,
        }
    }

    /// FFmpeg's muxer name.
    pub fn muxer(self) -> &'static str {
        match self {
            Container::Mp4 => "mp4",
            Container::Mov => "mov",
            Container::Matroska => "matroska",
        }
    }

    /// The file extension RAVE recognises it by, with the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Container::Mp4 => ".mp4",
            Container::Mov => ".mov",
            Container::Matroska => ".mkv",
        }
    }

    /// Its name in messages.
    pub fn label(self) -> &'static str {
        match self {
            Container::Mp4 => "MP4",
            Container::Mov => "QuickTime (.mov)",
            Container::Matroska => "Matroska",
        }
    }
}

/// The note for an input of `input_bits` (above 8) that libx264 keeps at its depth: H.264
/// High 10, which software players play and most hardware decoders (TVs, phones, browsers)
/// do not. `None` for another codec, an 8-bit input, or NVENC (it writes 8-bit H.264).
pub fn high10_note(codec: VideoCodec, nvenc: bool, input_bits: u8) -> Option<String> {
    (codec == VideoCodec::H264 && !nvenc && input_bits > 8).then(|| {
        format!(
            "the output is H.264 High 10 (the input is {input_bits}-bit): mpv, VLC and ffmpeg play it, most TVs, phones and browsers do not; --codec hevc keeps the depth in a form they play"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ten_bit_h264_from_libx264_is_noted() {
        let note = high10_note(VideoCodec::H264, false, 10).unwrap();
        assert!(
            note.starts_with("the output is H.264 High 10 (the input is 10-bit)"),
            "{note}"
        );
        assert!(high10_note(VideoCodec::H264, false, 8).is_none());
        assert!(high10_note(VideoCodec::H264, true, 10).is_none());
        assert!(high10_note(VideoCodec::Hevc, false, 10).is_none());
    }

    #[test]
    fn settings_validate_per_encoder() {
        let s = EncoderSettings::new(VideoCodec::H264, None, None).unwrap();
        assert_eq!((s.crf, s.preset.as_str()), (18, "medium"));
        assert!(EncoderSettings::new(VideoCodec::H264, Some(52), None).is_err());
        assert!(EncoderSettings::new(VideoCodec::Av1, Some(60), Some("4")).is_ok());
        assert!(EncoderSettings::new(VideoCodec::Av1, None, Some("fast")).is_err());
        let e = EncoderSettings::new(VideoCodec::Hevc, None, Some("turbo")).unwrap_err();
        assert!(e.to_string().contains("ultrafast"), "{e}");
    }

    #[test]
    fn nvenc_settings_take_nvenc_presets_and_the_usual_names() {
        use crate::encoder_choice::EncoderRequest;
        // Software settings are software unless the caller asks otherwise.
        let s = EncoderSettings::new(VideoCodec::H264, None, None).unwrap();
        assert_eq!(s.request, EncoderRequest::Software);
        let p6 = EncoderSettings::for_nvenc(VideoCodec::Hevc, Some(24), Some("P6")).unwrap();
        assert_eq!(
            (p6.crf, p6.preset.as_str(), p6.request),
            (24, "p6", EncoderRequest::Nvenc)
        );
        let named = EncoderSettings::for_nvenc(VideoCodec::H264, None, Some("veryfast")).unwrap();
        assert_eq!((named.crf, named.preset.as_str()), (18, "p2"));
        assert_eq!(
            EncoderSettings::for_nvenc(VideoCodec::H264, None, None)
                .unwrap()
                .preset,
            "p4"
        );
        assert!(EncoderSettings::for_nvenc(VideoCodec::H264, None, Some("p8")).is_err());
        assert!(EncoderSettings::for_nvenc(VideoCodec::H264, Some(52), None).is_err());
        // x264 has no p-presets; the refusal says whose they are.
        let e = EncoderSettings::new(VideoCodec::H264, None, Some("p4")).unwrap_err();
        assert!(e.to_string().contains("--encoder nvenc"), "{e}");
    }

    #[test]
    fn container_from_extension() {
        assert_eq!(
            Container::from_path(Path::new("a/B.MKV")).unwrap(),
            Container::Matroska
        );
        assert_eq!(
            Container::from_path(Path::new("x.mp4")).unwrap(),
            Container::Mp4
        );
        assert!(Container::from_path(Path::new("x.avi")).is_err());
        assert!(Container::from_path(Path::new("noext")).is_err());
    }
}
