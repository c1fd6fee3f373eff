//! The GPU path's stages around the converter (`gpu_convert.rs`): NVDEC set-up and decoded
//! frames, and what the report says about the decoder and encoder (the inference stage is
//! both paths' `infer_stage`).

use rave_core::error::Result;
use rave_core::gpu::GpuContext;
use rave_ffmpeg::nvdec::CudaDevice;
use rave_ffmpeg::{DecodeStats, DecodedFrame, VideoCodec, VideoReader};

/// An FFmpeg CUDA device on RAVE's context, FFmpeg's copies queued on the decode stream,
/// knowing what this GPU's NVDEC decodes (streams it does not are decoded in software on
/// their share of the cores).
pub fn nvdec_device(ctx: &GpuContext) -> Result<CudaDevice> {
    // SAFETY: the primary context and the decode stream live as long as `ctx`, which the
    // pipeline holds until the reader (and every frame it made) is gone.
    let device = unsafe {
        CudaDevice::new(
            ctx.cuda().cu_ctx().cast(),
            ctx.streams().decode.cu_stream().cast(),
        )
    }?;
    let caps = match ctx.cuda().bind_to_thread() {
        Ok(()) => rave_ffmpeg::hw_caps::nvdec_caps(),
        Err(e) => Err(format!("the GPU's context could not be made current: {e}")),
    };
    Ok(device.with_decode_caps(caps))
}

/// An FFmpeg CUDA device on RAVE's context whose work (NVENC's reads of its surfaces,
/// FFmpeg's transfers) is queued on the encode stream, where the postprocess kernel writes
/// the surfaces: the two are ordered by the stream itself.
pub fn nvenc_device(ctx: &GpuContext) -> Result<CudaDevice> {
    // SAFETY: as for `nvdec_device`, with the encode stream.
    unsafe {
        CudaDevice::new(
            ctx.cuda().cu_ctx().cast(),
            ctx.streams().encode.cu_stream().cast(),
        )
    }
}

/// An NVENC session probe for `ask` on GPU `gpu`, on its primary context as a run would
/// use it (the context is held until the probe is over); where no context or device can be
/// made there, `without_context` answers from why.
pub fn nvenc_session_on_gpu(
    ask: rave_ffmpeg::encoder_choice::SessionAsk,
    gpu: usize,
    without_context: impl FnOnce(String) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let ctx = match GpuContext::new(gpu) {
        Ok(ctx) => ctx,
        Err(e) => return without_context(e.to_string()),
    };
    match nvenc_device(&ctx) {
        Ok(device) => rave_ffmpeg::hw_caps::nvenc_session_on(ask, Some(&device)),
        Err(e) => without_context(e.to_string()),
    }
}

/// The next decoded frame. An NVDEC frame's copy into its surface is queued on the decode
/// stream when returned; the preprocess orders itself after that stream (no host wait).
pub fn next_decoded(reader: &mut VideoReader) -> Result<Option<DecodedFrame>> {
    reader.next_decoded()
}

/// Which decoder ran, for the report.
pub fn describe_decoder(stats: &DecodeStats, nvdec_wanted: bool) -> String {
    match (stats.nvdec_frames, stats.frames) {
        (0, _) if !nvdec_wanted => {
            "software (FFmpeg; --decoder software), one host-to-device copy per frame".into()
        }
        (0, _) => match &stats.nvdec_refused {
            Some(why) => format!("software (FFmpeg, on every core its share allows): {why}; one host-to-device copy per frame"),
            None => "software (FFmpeg): NVDEC does not take this codec, profile or size here; one host-to-device copy per frame".into(),
        },
        (n, all) if n == all => {
            "NVDEC (FFmpeg CUDA hwaccel in RAVE's context): frames stay on the GPU, no upload".into()
        }
        (n, all) => format!("NVDEC for {n} of {all} frames, software for the rest"),
    }
}

/// Which encoder ran (the software one, asked for by name) and whether NVENC would have
/// taken the output on `gpu`, the job's first GPU, for the report.
pub fn describe_encoder(codec: VideoCodec, gpu: usize) -> String {
    let software = codec.encoder_name();
    let nvenc = codec.nvenc_encoder();
    let ask = rave_ffmpeg::encoder_choice::SessionAsk {
        encoder: nvenc,
        size: None,
        bits: 8,
    };
    let why = match nvenc_session_on_gpu(ask, gpu, Err) {
        Ok(()) => {
            format!("{nvenc} is available on GPU {gpu} (--encoder auto or nvenc would take it)")
        }
        Err(reason) => format!("{nvenc} on GPU {gpu}: {reason}"),
    };
    format!("{software} (software) from one page-locked device-to-host copy per frame; {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_says_which_decoder_ran() {
        let stats = |nvdec, frames| DecodeStats {
            nvdec_frames: nvdec,
            frames,
            ..Default::default()
        };
        assert!(describe_decoder(&stats(5, 5), true).starts_with("NVDEC"));
        assert!(describe_decoder(&stats(0, 5), true).contains("NVDEC does not take"));
        let refused = DecodeStats {
            nvdec_refused: Some("NVDEC on this GPU does not decode 8-bit AV1".into()),
            ..stats(0, 5)
        };
        let said = describe_decoder(&refused, true);
        assert!(
            said.starts_with("software") && said.contains("8-bit AV1"),
            "{said}"
        );
        assert!(describe_decoder(&stats(0, 5), false).contains("--decoder software"));
        assert_eq!(
            describe_decoder(&stats(3, 5), true),
            "NVDEC for 3 of 5 frames, software for the rest"
        );
    }
}
