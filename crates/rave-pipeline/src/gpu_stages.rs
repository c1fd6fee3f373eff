//! The GPU path's stages around the converter (`gpu_convert.rs`): NVDEC set-up and decoded
//! frames, the inference stage with micro-batches, and what the report says about the
//! decoder and encoder.

use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rave_core::batch::{BatchCollector, Batching};
use rave_core::error::Result;
use rave_core::gpu::GpuContext;
use rave_core::metrics::StageMetrics;
use rave_core::types::GpuTexture;
use rave_ffmpeg::nvdec::CudaDevice;
use rave_ffmpeg::{DecodeStats, DecodedFrame, VideoCodec, VideoReader};
use rave_tensorrt::gpu_inference::GpuInference;

use crate::cancel::CancelToken;
use crate::channel::send;
use crate::gpu_convert::GpuFrame;
use crate::stages::name_frames;

/// An FFmpeg CUDA device on RAVE's context, FFmpeg's copies queued on the decode stream.
pub fn nvdec_device(ctx: &GpuContext) -> Result<CudaDevice> {
    // SAFETY: the primary context and the decode stream live as long as `ctx`, which the
    // pipeline holds until the reader (and every frame it made) is gone.
    unsafe {
        CudaDevice::new(
            ctx.cuda().cu_ctx().cast(),
            ctx.streams().decode.cu_stream().cast(),
        )
    }
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
        (0, _) => "software (FFmpeg): NVDEC does not take this codec, profile or size here; one host-to-device copy per frame".into(),
        (n, all) if n == all => {
            "NVDEC (FFmpeg CUDA hwaccel in RAVE's context): frames stay on the GPU, no upload".into()
        }
        (n, all) => format!("NVDEC for {n} of {all} frames, software for the rest"),
    }
}

/// Which encoder ran and why not NVENC, for the report.
pub fn describe_encoder(codec: VideoCodec) -> String {
    let software = codec.encoder_name();
    let nvenc = codec.nvenc_encoder();
    let status = rave_ffmpeg::hw_caps::nvenc_status_of(nvenc);
    let why = match (status.available, status.reason) {
        (true, _) => {
            format!("{nvenc} is available on this GPU (--encoder auto or nvenc would take it)")
        }
        (false, Some(reason)) => format!("{nvenc}: {reason}"),
        (false, None) => format!("{nvenc} is unavailable"),
    };
    format!("{software} (software) from one page-locked device-to-host copy per frame; {why}")
}

/// Run the model on the GPU, collecting micro-batches of up to `batch.max_batch` frames (or
/// whatever arrived within the latency deadline of the first), in order.
pub fn infer(
    backend: &dyn GpuInference,
    batch: Batching,
    rx: Receiver<GpuFrame>,
    tx: Sender<GpuFrame>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
) -> Result<()> {
    let mut collector = BatchCollector::new(batch);
    loop {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let wait = collector
            .time_left(Instant::now())
            .unwrap_or(std::time::Duration::from_millis(50));
        let ready = match rx.recv_timeout(wait) {
            Ok(frame) => collector.push(frame, Instant::now()),
            Err(RecvTimeoutError::Timeout) => collector.take_if_due(Instant::now()),
            Err(RecvTimeoutError::Disconnected) => {
                if let Some(rest) = collector.flush() {
                    run_batch(backend, rest, &tx, cancel, metrics)?;
                }
                record_gpu_times(backend, metrics, true)?;
                return Ok(());
            }
        };
        if let Some(frames) = ready
            && !run_batch(backend, frames, &tx, cancel, metrics)?
        {
            return Ok(());
        }
    }
}

/// Record the GPU times of the frames whose inference has finished (all of them with
/// `wait`), for a backend that returns before the GPU is done; false for one whose run is
/// synchronous (the stage's host time is then its time).
fn record_gpu_times(
    backend: &dyn GpuInference,
    metrics: &StageMetrics,
    wait: bool,
) -> Result<bool> {
    match backend.finished_gpu_times(wait)? {
        Some(times) => {
            times.into_iter().for_each(|t| metrics.record(t));
            Ok(true)
        }
        None => Ok(false),
    }
}

/// One inference over `frames`; returns false when the next stage is gone.
fn run_batch(
    backend: &dyn GpuInference,
    frames: Vec<GpuFrame>,
    tx: &Sender<GpuFrame>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
) -> Result<bool> {
    let first = frames[0].meta.index;
    let n = frames.len();
    let t = Instant::now();
    let outputs = if n == 1 {
        backend
            .process_one(frames[0].texture.clone())
            .map(|t| vec![t])
    } else {
        let inputs: Vec<GpuTexture> = frames.iter().map(|f| f.texture.clone()).collect();
        backend.process_many(&inputs)
    }
    .map_err(|e| name_frames(e, first, n))?;
    let per_frame = t.elapsed() / n as u32;
    let gpu_timed = record_gpu_times(backend, metrics, false)?;
    for (frame, texture) in frames.into_iter().zip(outputs) {
        if !gpu_timed {
            metrics.record(per_frame);
        }
        // The input texture goes back to the pool here; its events order the next writer
        // after the run's reads (a synchronous run has finished them).
        let out = GpuFrame {
            meta: frame.meta,
            texture,
        };
        if !send(tx, out, cancel) {
            return Ok(false);
        }
    }
    Ok(true)
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
        assert!(describe_decoder(&stats(0, 5), false).contains("--decoder software"));
        assert_eq!(
            describe_decoder(&stats(3, 5), true),
            "NVDEC for 3 of 5 frames, software for the rest"
        );
    }
}
