//! What RAVE asks of FFmpeg's NVENC encoders (h264_nvenc, hevc_nvenc, av1_nvenc) for the
//! user's `--codec`, `--crf`, `--preset` and the input's bit depth: the surface format the
//! postprocess kernel writes, and the encoder options. Pure mapping, no GPU: the NVENC
//! encode path itself (issue 12) builds on it.
//!
//! - `--crf` is NVENC's constant-quality mode: `rc=vbr` with `cq=<crf>` and no bitrate cap
//!   (`b:v 0`), the same 0-51 scale as x264/x265; for AV1 the SVT-AV1 scale 0-63 is mapped
//!   linearly onto NVENC's 0-51. NVENC reads `cq 0` as "automatic", so `--crf 0` becomes
//!   constant QP 0 instead.
//! - `--preset` takes NVENC's own p1 (fastest) .. p7 (best), or the x264/x265 names and the
//!   SVT-AV1 numbers, mapped by speed: ultrafast/superfast p1, veryfast p2, faster/fast p3,
//!   medium p4 (NVENC's default), slow p5, slower p6, veryslow/placebo p7; SVT-AV1 12-13 p1,
//!   10-11 p2, 8-9 p3, 6-7 p4, 4-5 p5, 2-3 p6, 0-1 p7.
//! - 10-bit input keeps 10 bits with HEVC (Main10) and AV1 (P010 surfaces); H.264 NVENC
//!   encodes 8 bits only, which the notes say.
//! - Keyframes at a fixed interval (`g`; FFmpeg sets NVENC's IDR period to it, so each is
//!   an IDR), forced keyframes as IDRs too (`forced-idr`), and no extra keyframes at scene
//!   cuts (`no-scenecut`, which matters once lookahead is on): segments encoded apart start
//!   clean and join.

use rave_core::error::{EngineError, Result};

use crate::codec_choice::VideoCodec;

/// NVENC's speed presets, fastest first.
pub const NVENC_PRESETS: [&str; 7] = ["p1", "p2", "p3", "p4", "p5", "p6", "p7"];
/// NVENC's constant-quality scale (`cq`), 0 meaning "automatic".
const NVENC_MAX_CQ: u32 = 51;

/// The surface format of the frames handed to NVENC (FFmpeg's CUDA frames pool `sw_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum NvencSurface {
    /// 8-bit 4:2:0, luma plane then interleaved chroma.
    Nv12,
    /// 10-bit 4:2:0 in 16-bit words (high bits), luma then interleaved chroma.
    P010,
}

impl NvencSurface {
    /// FFmpeg's name of the pixel format.
    pub fn ffmpeg_name(self) -> &'static str {
        match self {
            NvencSurface::Nv12 => "nv12",
            NvencSurface::P010 => "p010le",
        }
    }
}

/// The NVENC encoder, its surfaces and options for one output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvencConfig {
    /// FFmpeg encoder name.
    pub encoder: &'static str,
    /// Surfaces the postprocess kernel writes.
    pub surface: NvencSurface,
    /// Bits per sample of the output.
    pub output_bits: u8,
    /// The NVENC preset (p1..p7).
    pub preset: &'static str,
    /// Encoder options, `(name, value)`, in the order they are set.
    pub options: Vec<(&'static str, String)>,
    /// What differs from what was asked, in words (for the report).
    pub notes: Vec<String>,
}

/// Whether `preset` is one of NVENC's own (p1..p7, any case), not a software encoder's.
pub fn is_nvenc_own_preset(preset: &str) -> bool {
    NVENC_PRESETS.contains(&preset.to_ascii_lowercase().as_str())
}

/// The NVENC preset for `preset` (None: p4), or why it is not one.
pub fn nvenc_preset(codec: VideoCodec, preset: Option<&str>) -> Result<&'static str> {
    let Some(given) = preset else {
        return Ok("p4");
    };
    let p = given.to_ascii_lowercase();
    if let Some(&own) = NVENC_PRESETS.iter().find(|&&n| n == p) {
        return Ok(own);
    }
    let by_name = match p.as_str() {
        "ultrafast" | "superfast" => Some("p1"),
        "veryfast" => Some("p2"),
        "faster" | "fast" => Some("p3"),
        "medium" => Some("p4"),
        "slow" => Some("p5"),
        "slower" => Some("p6"),
        "veryslow" | "placebo" => Some("p7"),
        _ => None,
    };
    let by_number = match (codec, p.parse::<u8>()) {
        (VideoCodec::Av1, Ok(n @ 0..=13)) => Some(NVENC_PRESETS[6 - (n as usize / 2).min(6)]),
        _ => None,
    };
    by_name.or(by_number).ok_or_else(|| {
        EngineError::Config(format!(
            "--preset {given:?} is not an NVENC preset: use p1 (fastest) to p7 (best), or an x264 name (ultrafast .. placebo){}",
            if codec == VideoCodec::Av1 {
                " or an SVT-AV1 number (0-13)"
            } else {
                ""
            }
        ))
    })
}

/// The rate-control options for `crf` (None: the codec's default), or why it is out of
/// range.
pub fn nvenc_quality(codec: VideoCodec, crf: Option<u32>) -> Result<Vec<(&'static str, String)>> {
    let crf = crf.unwrap_or(codec.default_crf());
    if crf > codec.max_crf() {
        return Err(EngineError::Config(format!(
            "--crf {crf} is out of range for {codec}: use 0-{}",
            codec.max_crf()
        )));
    }
    // AV1's --crf is SVT-AV1's 0-63; NVENC's constant quality is 0-51 for every codec.
    let cq = match codec {
        VideoCodec::Av1 => (crf * NVENC_MAX_CQ + codec.max_crf() / 2) / codec.max_crf(),
        _ => crf,
    };
    Ok(match cq {
        // cq 0 means "automatic" to NVENC: the best quality is constant QP 0.
        0 => vec![("rc", "constqp".into()), ("qp", "0".into())],
        _ => vec![
            ("rc", "vbr".into()),
            ("cq", cq.to_string()),
            ("b", "0".into()),
        ],
    })
}

impl NvencConfig {
    /// The NVENC configuration for `codec` at `crf` and `preset` (validated), input of
    /// `input_bits` per sample, a keyframe every `gop` frames.
    pub fn new(
        codec: VideoCodec,
        crf: Option<u32>,
        preset: Option<&str>,
        input_bits: u8,
        gop: u32,
    ) -> Result<Self> {
        let preset = nvenc_preset(codec, preset)?;
        let mut options = vec![("preset", preset.to_string()), ("tune", "hq".to_string())];
        options.extend(nvenc_quality(codec, crf)?);
        let mut notes = Vec::new();
        let ten_bit = input_bits > 8;
        let (surface, output_bits) = match (codec, ten_bit) {
            (VideoCodec::H264, true) => {
                notes.push(format!(
                    "h264_nvenc encodes 8 bits: the {input_bits}-bit input is written as 8-bit (--codec hevc or av1 keeps 10 bits)"
                ));
                (NvencSurface::Nv12, 8)
            }
            (_, true) => {
                if input_bits > 10 {
                    notes.push(format!(
                        "{} encodes up to 10 bits here: the {input_bits}-bit input is written as 10-bit",
                        codec.nvenc_encoder()
                    ));
                }
                (NvencSurface::P010, 10)
            }
            (_, false) => (NvencSurface::Nv12, 8),
        };
        if codec == VideoCodec::Hevc {
            let profile = if ten_bit { "main10" } else { "main" };
            options.push(("profile", profile.to_string()));
        }
        options.extend([
            ("g", gop.max(1).to_string()),
            ("forced-idr", "1".to_string()),
            ("no-scenecut", "1".to_string()),
        ]);
        Ok(Self {
            encoder: codec.nvenc_encoder(),
            surface,
            output_bits,
            preset,
            options,
            notes,
        })
    }

    /// The value of option `name`, if set.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crf_is_nvencs_constant_quality_on_its_own_scale() {
        let h = NvencConfig::new(VideoCodec::H264, Some(23), None, 8, 240).unwrap();
        assert_eq!(
            (h.option("rc"), h.option("cq"), h.option("b")),
            (Some("vbr"), Some("23"), Some("0"))
        );
        // The default is the software path's (18 for H.264).
        let d = NvencConfig::new(VideoCodec::H264, None, None, 8, 240).unwrap();
        assert_eq!(d.option("cq"), Some("18"));
        // AV1: SVT-AV1's 0-63 onto NVENC's 0-51 (63 -> 51, 28 -> 23, 1 -> 1).
        for (crf, cq) in [(63, "51"), (28, "23"), (1, "1")] {
            let a = NvencConfig::new(VideoCodec::Av1, Some(crf), None, 8, 240).unwrap();
            assert_eq!(a.option("cq"), Some(cq), "crf {crf}");
        }
        // crf 0: cq 0 would mean "automatic"; constant QP 0 instead.
        let lossless = NvencConfig::new(VideoCodec::Hevc, Some(0), None, 8, 240).unwrap();
        assert_eq!(
            (
                lossless.option("rc"),
                lossless.option("qp"),
                lossless.option("cq")
            ),
            (Some("constqp"), Some("0"), None)
        );
        let err = NvencConfig::new(VideoCodec::Hevc, Some(52), None, 8, 240).unwrap_err();
        assert!(err.to_string().contains("use 0-51"), "{err}");
    }

    #[test]
    fn presets_take_nvenc_names_and_the_usual_ones_by_speed() {
        let p = |c, s: &str| nvenc_preset(c, Some(s)).unwrap();
        assert_eq!(nvenc_preset(VideoCodec::H264, None).unwrap(), "p4");
        for (name, want) in [
            ("P7", "p7"),
            ("p1", "p1"),
            ("ultrafast", "p1"),
            ("veryfast", "p2"),
            ("fast", "p3"),
            ("medium", "p4"),
            ("slow", "p5"),
            ("slower", "p6"),
            ("placebo", "p7"),
        ] {
            assert_eq!(p(VideoCodec::Hevc, name), want, "{name}");
        }
        for (n, want) in [("13", "p1"), ("8", "p3"), ("6", "p4"), ("0", "p7")] {
            assert_eq!(p(VideoCodec::Av1, n), want, "svt-av1 {n}");
        }
        // Numbers are SVT-AV1's only; unknown names say what is taken.
        let err = nvenc_preset(VideoCodec::H264, Some("8"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("p1 (fastest) to p7") && !err.contains("SVT-AV1"),
            "{err}"
        );
        let err = nvenc_preset(VideoCodec::Av1, Some("p8"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("SVT-AV1 number"), "{err}");
    }

    #[test]
    fn ten_bit_input_keeps_ten_bits_where_the_codec_can() {
        let hevc = NvencConfig::new(VideoCodec::Hevc, None, None, 10, 240).unwrap();
        assert_eq!((hevc.surface, hevc.output_bits), (NvencSurface::P010, 10));
        assert_eq!(hevc.option("profile"), Some("main10"));
        assert!(hevc.notes.is_empty());
        let av1 = NvencConfig::new(VideoCodec::Av1, None, None, 10, 240).unwrap();
        assert_eq!(
            (av1.surface, av1.encoder),
            (NvencSurface::P010, "av1_nvenc")
        );
        let h264 = NvencConfig::new(VideoCodec::H264, None, None, 10, 240).unwrap();
        assert_eq!((h264.surface, h264.output_bits), (NvencSurface::Nv12, 8));
        assert!(h264.notes[0].contains("8-bit"), "{:?}", h264.notes);
        let twelve = NvencConfig::new(VideoCodec::Hevc, None, None, 12, 240).unwrap();
        assert_eq!(twelve.output_bits, 10);
        assert!(twelve.notes[0].contains("12-bit"), "{:?}", twelve.notes);
        let eight = NvencConfig::new(VideoCodec::Hevc, None, None, 8, 240).unwrap();
        assert_eq!(
            (eight.surface, eight.option("profile")),
            (NvencSurface::Nv12, Some("main"))
        );
        assert_eq!(NvencSurface::P010.ffmpeg_name(), "p010le");
    }

    #[test]
    fn keyframes_are_idr_at_a_fixed_interval_so_segments_join() {
        let c = NvencConfig::new(VideoCodec::H264, None, Some("slow"), 8, 120).unwrap();
        assert_eq!(c.encoder, "h264_nvenc");
        assert_eq!(
            (
                c.option("g"),
                c.option("forced-idr"),
                c.option("no-scenecut")
            ),
            (Some("120"), Some("1"), Some("1"))
        );
        assert_eq!((c.preset, c.option("preset")), ("p5", Some("p5")));
        // Options are set in a fixed order: the preset first, so later options override it.
        assert_eq!(c.options[0].0, "preset");
        assert_eq!(
            NvencConfig::new(VideoCodec::H264, None, None, 8, 0)
                .unwrap()
                .option("g"),
            Some("1")
        );
    }
}
