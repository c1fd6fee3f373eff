//! Which encoder a run uses: `--encoder auto` takes NVENC where a session really opens for
//! the codec, size and bit depth and the frames are on the GPU, else the software encoder,
//! with the reason; `--encoder nvenc` where no session opens is refused with FFmpeg's
//! reason before any frame is processed. The session probe is passed in, so the choice is
//! tested without a GPU.

use crate::codec_choice::VideoCodec;

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EncoderRequest {
    /// NVENC where it works, else software.
    Auto,
    /// The codec's software encoder.
    Software,
    /// NVENC or nothing.
    Nvenc,
}

/// What a run would encode with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncoderPick {
    /// The codec's software encoder.
    Software {
        /// Why not NVENC (for the report).
        reason: String,
    },
    /// The codec's NVENC encoder (FFmpeg name), whose probe session opened.
    Nvenc {
        /// FFmpeg encoder name.
        encoder: &'static str,
    },
}

/// What the session probe is asked: encoder, output size, bits per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionAsk {
    /// FFmpeg encoder name.
    pub encoder: &'static str,
    /// Output width and height; None before the input is read (a small test session).
    pub size: Option<(u32, u32)>,
    /// Bits per sample of the surfaces (the output's: `NvencConfig::output_bits`, 8 for
    /// H.264 whatever the input).
    pub bits: u8,
}

/// Choose for `codec` at `size` (None: not known yet) and `bits` per output sample (the
/// surfaces NVENC would take: `NvencConfig::output_bits`); `frames_on_gpu` says whether the pipeline's
/// frames are on the GPU (NVENC takes CUDA frames only), `open` tries a session and says
/// why it did not open. `Err` is the refusal of an explicit `--encoder nvenc`.
pub fn choose_encoder(
    request: EncoderRequest,
    codec: VideoCodec,
    size: Option<(u32, u32)>,
    bits: u8,
    frames_on_gpu: bool,
    open: impl FnOnce(SessionAsk) -> Result<(), String>,
) -> Result<EncoderPick, String> {
    let encoder = codec.nvenc_encoder();
    let software = codec.encoder_name();
    match (request, frames_on_gpu) {
        (EncoderRequest::Software, _) => {
            return Ok(EncoderPick::Software {
                reason: format!("{software} as asked (--encoder)"),
            });
        }
        (EncoderRequest::Nvenc, false) => {
            return Err("--encoder nvenc encodes frames on the GPU, and this run's frames are on the CPU (--device cpu, or no usable GPU); use --device gpu or --encoder auto".into());
        }
        (EncoderRequest::Auto, false) => {
            return Ok(EncoderPick::Software {
                reason: format!("{software}: the frames are on the CPU"),
            });
        }
        _ => {}
    }
    let ask = SessionAsk {
        encoder,
        size,
        bits,
    };
    match (open(ask), request) {
        (Ok(()), _) => Ok(EncoderPick::Nvenc { encoder }),
        (Err(why), EncoderRequest::Nvenc) => Err(format!(
            "--encoder nvenc: {encoder} cannot open a session{} here ({why}); use --encoder auto",
            match size {
                Some((w, h)) => format!(" for {w}x{h} {bits}-bit"),
                None => String::new(),
            }
        )),
        (Err(why), _) => Ok(EncoderPick::Software {
            reason: format!("{software}; {encoder}: {why}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_DEVICE: &str = "OpenEncodeSessionEx failed: unsupported device (2): (no details); No capable devices found";

    fn never(_: SessionAsk) -> Result<(), String> {
        panic!("no session is tried")
    }

    #[test]
    fn auto_takes_nvenc_only_where_a_session_opens_for_this_output() {
        let mut asked = None;
        let pick = choose_encoder(
            EncoderRequest::Auto,
            VideoCodec::Hevc,
            Some((3840, 2160)),
            10,
            true,
            |a| {
                asked = Some(a);
                Ok(())
            },
        );
        assert_eq!(
            pick,
            Ok(EncoderPick::Nvenc {
                encoder: "hevc_nvenc"
            })
        );
        assert_eq!(
            asked,
            Some(SessionAsk {
                encoder: "hevc_nvenc",
                size: Some((3840, 2160)),
                bits: 10
            })
        );
        let pick = choose_encoder(
            EncoderRequest::Auto,
            VideoCodec::H264,
            Some((1920, 1080)),
            8,
            true,
            |_| Err(NO_DEVICE.into()),
        );
        match pick {
            Ok(EncoderPick::Software { reason }) => {
                assert!(reason.starts_with("libx264; h264_nvenc: "), "{reason}");
                assert!(reason.contains("No capable devices found"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_on_the_cpu_never_try_a_session() {
        let pick = choose_encoder(EncoderRequest::Auto, VideoCodec::Av1, None, 8, false, never);
        assert!(
            matches!(pick, Ok(EncoderPick::Software { reason }) if reason.contains("on the CPU"))
        );
        let refused = choose_encoder(
            EncoderRequest::Nvenc,
            VideoCodec::Av1,
            None,
            8,
            false,
            never,
        );
        assert!(refused.unwrap_err().contains("--device gpu"));
        let software = choose_encoder(
            EncoderRequest::Software,
            VideoCodec::Av1,
            None,
            8,
            true,
            never,
        );
        assert!(
            matches!(software, Ok(EncoderPick::Software { reason }) if reason.starts_with("libsvtav1"))
        );
    }

    #[test]
    fn an_explicit_nvenc_without_a_session_is_refused_with_ffmpegs_words() {
        let refused = choose_encoder(
            EncoderRequest::Nvenc,
            VideoCodec::H264,
            Some((1280, 720)),
            8,
            true,
            |_| Err(NO_DEVICE.into()),
        )
        .unwrap_err();
        assert!(
            refused.starts_with(
                "--encoder nvenc: h264_nvenc cannot open a session for 1280x720 8-bit"
            ),
            "{refused}"
        );
        assert!(
            refused.contains("No capable devices found") && refused.ends_with("use --encoder auto"),
            "{refused}"
        );
    }
}
