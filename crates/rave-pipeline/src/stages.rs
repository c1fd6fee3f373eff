//! The bodies of the stage threads. Each takes frames from its input channel, does its one
//! job, times it, and passes the frame on in order; each stops promptly on cancellation.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use rave_core::color::ColorInfo;
use rave_core::damage::InputDamage;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{HostRgbFrame, HostYuvFrame};
use rave_core::metrics::StageMetrics;
use rave_ffmpeg::VideoReader;

use crate::cancel::{CancelToken, StopReason};
use crate::channel::{recv, send};

/// Live counters of the five stages.
#[derive(Debug, Default)]
pub struct PipelineMetrics {
    /// Demux + decode + import.
    pub decode: StageMetrics,
    /// YUV -> RGB.
    pub preprocess: StageMetrics,
    /// Model.
    pub infer: StageMetrics,
    /// RGB -> YUV.
    pub postprocess: StageMetrics,
    /// Encode + mux.
    pub encode: StageMetrics,
}

impl PipelineMetrics {
    /// Snapshots in pipeline order.
    pub fn snapshots(&self) -> Vec<rave_core::metrics::StageSnapshot> {
        vec![
            self.decode.snapshot("decode"),
            self.preprocess.snapshot("preprocess"),
            self.infer.snapshot("infer"),
            self.postprocess.snapshot("postprocess"),
            self.encode.snapshot("encode"),
        ]
    }
}

/// The first error any stage hit; later ones are consequences and are dropped.
#[derive(Default)]
pub struct FirstError(Mutex<Option<EngineError>>);

impl FirstError {
    /// Record `err` if it is the first, and stop the other stages.
    pub fn record(&self, err: EngineError, cancel: &CancelToken) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(err);
        }
        drop(slot);
        cancel.cancel(StopReason::Failure);
    }

    /// The recorded error, if any.
    pub fn take(&self) -> Option<EngineError> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Run `body`; an error is recorded and stops the pipeline.
pub fn guarded(errors: &FirstError, cancel: &CancelToken, body: impl FnOnce() -> Result<()>) {
    if let Err(e) = body() {
        errors.record(e, cancel);
    }
}

/// What to do about a damaged input, appended to its error.
pub const CORRUPT_HINT: &str =
    "; pass --allow-corrupt to upscale what can be read (the report counts what is missing)";

/// Why nothing can be done with an input that has no decodable frame.
pub const NO_FRAMES_HINT: &str =
    "; the file holds no video RAVE can decode (--allow-corrupt cannot help)";

/// The error that refuses a damaged input, or `None` when the run may keep its output:
/// the input is clean, or damaged with `allow_corrupt` and at least one frame decoded.
pub fn damage_refusal(
    path: &std::path::Path,
    damage: &InputDamage,
    allow_corrupt: bool,
) -> Option<EngineError> {
    let hint = if damage.no_decodable_video() {
        NO_FRAMES_HINT
    } else if damage.is_clean() || allow_corrupt {
        return None;
    } else {
        CORRUPT_HINT
    };
    Some(EngineError::CorruptStream {
        path: path.to_path_buf(),
        damage: Box::new(damage.clone()),
        hint: hint.into(),
    })
}

/// The error for an input found damaged (without --allow-corrupt): the rest of the file is
/// read (not decoded) first so the error can say how much is missing. A user stop ends the
/// reading early.
pub fn refuse_damaged(reader: &mut VideoReader, cancel: &CancelToken) -> EngineError {
    if let Err(e) = reader.scan_to_end(|| cancel.reason() != Some(StopReason::User)) {
        return e;
    }
    let damage = reader.damage();
    damage_refusal(reader.path(), &damage, false).unwrap_or_else(|| {
        EngineError::InvariantViolation(format!("damage was seen but not counted: {damage:?}"))
    })
}

/// What the decode stage does with damaged input.
#[derive(Debug, Clone, Copy)]
pub struct DecodePolicy {
    /// Keep going and count the damage (else stop, count it all, and fail).
    pub allow_corrupt: bool,
    /// Stop after this many frames.
    pub max_frames: Option<u64>,
}

/// Decode frames with `pull` (host frames, or NVDEC surfaces on the GPU path) and send them
/// on. Returns the frames sent when the reader reached its end (the input's, its segment's
/// bound, or `policy.max_frames` of this reader's frames), `None` when the run stopped first.
/// (`metrics` is shared by every segment of the job, so the limit counts this reader's own
/// frames.)
pub fn decode<T>(
    reader: &mut VideoReader,
    tx: &Sender<T>,
    policy: DecodePolicy,
    cancel: &CancelToken,
    metrics: &StageMetrics,
    mut pull: impl FnMut(&mut VideoReader) -> Result<Option<T>>,
) -> Result<Option<u64>> {
    let mut sent = 0u64;
    loop {
        if policy.max_frames.is_some_and(|m| sent >= m) {
            return Ok(Some(sent));
        }
        let t = Instant::now();
        let Some(frame) = pull(reader)? else {
            return Ok(Some(sent));
        };
        metrics.record(t.elapsed());
        if !policy.allow_corrupt && reader.damage_seen() {
            cancel.cancel(StopReason::Failure);
            return Err(refuse_damaged(reader, cancel));
        }
        if !send(tx, frame, cancel) {
            return Ok(None);
        }
        sent += 1;
    }
}

/// A stage that maps each frame to a new one with `convert` (the colour conversions, with
/// the GPU path's uploads and downloads), keeping its identity and order; the first failure
/// ends it.
pub fn convert<A, B>(
    rx: Receiver<A>,
    tx: Sender<B>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
    mut convert: impl FnMut(A) -> Result<B>,
) -> Result<()> {
    convert_measured(rx, tx, cancel, metrics, |frame| {
        let t = Instant::now();
        let out = convert(frame)?;
        Ok((out, t.elapsed()))
    })
}

/// As [`convert`], the conversion saying itself how long each frame kept the stage busy
/// (GPU work that the host does not wait for all through, timed by events).
pub fn convert_measured<A, B>(
    rx: Receiver<A>,
    tx: Sender<B>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
    mut convert: impl FnMut(A) -> Result<(B, Duration)>,
) -> Result<()> {
    while let Some(frame) = recv(&rx, cancel) {
        let (out, busy) = convert(frame)?;
        metrics.record(busy);
        if !send(&tx, out, cancel) {
            break;
        }
    }
    Ok(())
}

/// Preprocess: decoded YUV to the RGB tensor the model takes.
pub fn to_rgb(frame: HostYuvFrame, color: &ColorInfo) -> HostRgbFrame {
    HostRgbFrame {
        meta: frame.meta,
        image: rave_cuda::yuv420_to_rgb(&frame.image, color),
    }
}

/// Postprocess: upscaled RGB back to YUV 4:2:0 at the source's bit depth.
pub fn to_yuv(frame: HostRgbFrame, color: &ColorInfo) -> HostYuvFrame {
    HostYuvFrame {
        meta: frame.meta,
        image: rave_cuda::rgb_to_yuv420(&frame.image, color, color.bit_depth),
    }
}

/// An inference error names the frame (or the frames of the batch) it hit.
pub fn name_frames(e: EngineError, first: u64, n: usize) -> EngineError {
    match e {
        EngineError::Inference(msg) => EngineError::Inference(format!(
            "{}: {msg}",
            rave_core::batch::describe_frames(first, n)
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_batch_names_its_frames() {
        let e = name_frames(EngineError::Inference("out of memory".into()), 40, 4);
        assert_eq!(
            e.to_string(),
            EngineError::Inference("frames 40-43: out of memory".into()).to_string()
        );
        let one = name_frames(EngineError::Inference("bad input".into()), 7, 1);
        assert_eq!(
            one.to_string(),
            EngineError::Inference("frame 7: bad input".into()).to_string()
        );
        let other = name_frames(EngineError::Cancelled, 1, 2);
        assert_eq!(other.kind(), EngineError::Cancelled.kind());
    }
}
