//! The GPU path's middle stages. Decoded frames are uploaded once (one host-to-device copy),
//! converted to the model's RGB tensor by the preprocess kernel, upscaled by the GPU backend
//! (micro-batched when asked), converted back to YUV by the postprocess kernel and copied to
//! the host once for the software encoder (one device-to-host copy). The copies are counted
//! where they are made, so the report shows them per frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rave_core::backend::UpscaleBackend;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};
use rave_core::gpu::GpuContext;
use rave_core::metrics::StageMetrics;
use rave_core::types::{GpuTexture, PixelFormat};
use rave_cuda::gpu_kernels::{ColorKernels, DeviceYuv};
use rave_cuda::packing::{PlaneLayout, YuvLayout, pack, unpack};
use rave_ffmpeg::nvdec::{CudaDevice, CudaFrame};
use rave_ffmpeg::{DecodeStats, DecodedFrame, DecodedImage, VideoCodec, VideoReader};
use rave_tensorrt::batch::{BatchCollector, BatchConfig, describe_frames};
use rave_tensorrt::gpu_backend::TensorRtBackend;
use serde::Serialize;

use crate::cancel::CancelToken;
use crate::channel::{recv, send};
use rave_core::block_on::block_on;

/// A frame resident on the GPU with its identity.
pub struct GpuFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub texture: GpuTexture,
}

/// Host copies of frame data, counted where they happen.
#[derive(Debug, Default)]
pub struct HostCopies {
    uploads: AtomicU64,
    downloads: AtomicU64,
}

/// Host copies per frame, for the report.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct HostCopyReport {
    /// Host-to-device copies of frame data (software decode: 1 per frame).
    pub uploads: u64,
    /// Device-to-host copies of frame data (software encode: 1 per frame).
    pub downloads: u64,
    /// (uploads + downloads) / frames.
    pub per_frame: f64,
}

impl HostCopies {
    /// The counts over `frames` frames.
    pub fn report(&self, frames: u64) -> HostCopyReport {
        let (u, d) = (
            self.uploads.load(Ordering::Relaxed),
            self.downloads.load(Ordering::Relaxed),
        );
        HostCopyReport {
            uploads: u,
            downloads: d,
            per_frame: if frames > 0 {
                (u + d) as f64 / frames as f64
            } else {
                0.0
            },
        }
    }
}

/// Colour conversion on the GPU, with the uploads and downloads around it.
pub struct GpuConverter {
    ctx: Arc<GpuContext>,
    kernels: ColorKernels,
    color: ColorInfo,
    tensor: PixelFormat,
    copies: Arc<HostCopies>,
    /// Page-locked landing buffer of the downloads (reused; grows with the frame size).
    pinned: std::sync::Mutex<Option<cudarc::driver::PinnedHostSlice<u8>>>,
}

fn layout_for(bit_depth: u8) -> YuvLayout {
    if bit_depth > 8 {
        YuvLayout::Yuv420p16
    } else {
        YuvLayout::Yuv420p8
    }
}

fn cuda_err(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> EngineError {
    move |e| EngineError::Cuda(format!("{what}: {e}"))
}

impl GpuConverter {
    /// Load the kernels into `ctx` for frames of `color`, producing `tensor` (F32 or F16).
    pub fn new(
        ctx: Arc<GpuContext>,
        color: ColorInfo,
        tensor: PixelFormat,
        copies: Arc<HostCopies>,
    ) -> Result<Self> {
        Ok(Self {
            kernels: ColorKernels::load(ctx.cuda())?,
            ctx,
            color,
            tensor,
            copies,
            pinned: std::sync::Mutex::new(None),
        })
    }

    /// Convert a decoded frame to the model's RGB: an NVDEC surface in place, a host frame
    /// after one upload.
    pub fn ingest(&self, frame: DecodedFrame) -> Result<GpuFrame> {
        match frame.image {
            DecodedImage::Host(image) => self.upload(HostYuvFrame {
                meta: frame.meta,
                image,
            }),
            DecodedImage::Cuda(surface) => self.convert_surface(frame.meta, surface),
        }
    }

    /// Convert an NVDEC surface (NV12 or P010) to the model's RGB, reading it in place; the
    /// surface goes back to the decoder once the kernel has read it.
    fn convert_surface(&self, meta: FrameMeta, surface: CudaFrame) -> Result<GpuFrame> {
        let p = surface.planes()?;
        let (w, h) = p.size;
        let layout = PlaneLayout {
            layout: if p.sixteen_bit {
                YuvLayout::P010
            } else {
                YuvLayout::Nv12
            },
            width: w,
            height: h,
            y_pitch: p.y_pitch,
            c_pitch: p.uv_pitch,
            u_offset: 0,
            v_offset: 0,
            bytes: 0,
        };
        let stream = &self.ctx.streams().preprocess;
        let n = 3 * w as usize * h as usize;
        let rgb = self.ctx.alloc_pooled(n * self.tensor.element_bytes())?;
        let planes = DeviceYuv {
            y: p.y,
            u: p.uv,
            v: p.uv,
            layout,
        };
        self.kernels
            .yuv_to_rgb(stream, &planes, rgb.device_addr(), self.tensor, &self.color)?;
        stream.synchronize().map_err(cuda_err("preprocess sync"))?;
        drop(surface);
        Ok(GpuFrame {
            meta,
            texture: GpuTexture {
                data: Arc::new(rgb),
                width: w,
                height: h,
                pitch: w as usize * self.tensor.element_bytes(),
                format: self.tensor,
            },
        })
    }

    /// Upload a decoded frame (one host-to-device copy) and convert it to the model's RGB.
    pub fn upload(&self, frame: HostYuvFrame) -> Result<GpuFrame> {
        let img = &frame.image;
        let layout = PlaneLayout::new(layout_for(img.bit_depth), img.width, img.height, 1);
        let host = pack(img, &layout);
        let stream = &self.ctx.streams().preprocess;
        let yuv = self.ctx.alloc_pooled(layout.bytes)?;
        // SAFETY: `yuv` holds at least `layout.bytes` = `host.len()` bytes; a copy from
        // pageable memory has read `host` when the call returns.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(yuv.device_addr(), &host, stream.cu_stream())
        }
        .map_err(cuda_err("uploading a frame"))?;
        self.copies.uploads.fetch_add(1, Ordering::Relaxed);
        let n = 3 * img.width as usize * img.height as usize;
        let rgb = self.ctx.alloc_pooled(n * self.tensor.element_bytes())?;
        self.kernels.yuv_to_rgb(
            stream,
            &DeviceYuv::from_base(yuv.device_addr(), layout),
            rgb.device_addr(),
            self.tensor,
            &self.color,
        )?;
        // `yuv` goes back to the pool now; the next upload reuses it on this same stream, so
        // after this kernel has read it.
        Ok(GpuFrame {
            meta: frame.meta,
            texture: GpuTexture {
                data: Arc::new(rgb),
                width: img.width,
                height: img.height,
                pitch: img.width as usize * self.tensor.element_bytes(),
                format: self.tensor,
            },
        })
    }

    /// Convert an upscaled frame to YUV at `bit_depth` and copy it to the host (one
    /// device-to-host copy). The texture is released only after the copy completed, so its
    /// ring slot is never rewritten while the kernel still reads it.
    pub fn download(&self, frame: GpuFrame, bit_depth: u8) -> Result<HostYuvFrame> {
        let t = &frame.texture;
        let layout = PlaneLayout::new(layout_for(bit_depth), t.width, t.height, 1);
        let stream = &self.ctx.streams().encode;
        let yuv = self.ctx.alloc_pooled(layout.bytes)?;
        self.kernels.rgb_to_yuv(
            stream,
            t.device_ptr(),
            t.format,
            &DeviceYuv::from_base(yuv.device_addr(), layout),
            &self.color,
        )?;
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.as_ref().is_none_or(|p| p.len() < layout.bytes) {
            // SAFETY: page-locked host memory whose contents are written by the copy below
            // before anything reads them.
            let fresh = unsafe { self.ctx.cuda().alloc_pinned::<u8>(layout.bytes) }
                .map_err(cuda_err("allocating page-locked memory"))?;
            *pinned = Some(fresh);
        }
        let host = pinned.as_mut().expect("allocated above");
        let dst = host.as_mut_ptr().map_err(cuda_err("page-locked buffer"))?;
        // SAFETY: `yuv` holds `layout.bytes` bytes written by the kernel queued before on the
        // same stream; `dst` is page-locked memory of at least that many bytes, not touched
        // by anything else until the stream is synchronized below.
        unsafe {
            cudarc::driver::sys::cuMemcpyDtoHAsync_v2(
                dst.cast(),
                yuv.device_addr(),
                layout.bytes,
                stream.cu_stream(),
            )
            .result()
        }
        .map_err(cuda_err("downloading a frame"))?;
        stream.synchronize().map_err(cuda_err("download sync"))?;
        self.copies.downloads.fetch_add(1, Ordering::Relaxed);
        drop(frame.texture);
        let bytes = host.as_slice().map_err(cuda_err("page-locked buffer"))?;
        Ok(HostYuvFrame {
            meta: frame.meta,
            image: unpack(&bytes[..layout.bytes], &layout),
        })
    }
}

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

/// The next decoded frame; an NVDEC frame is complete in device memory when returned (the
/// decode stream, where FFmpeg queued its copy, is synchronized).
pub fn next_decoded(reader: &mut VideoReader, ctx: &GpuContext) -> Result<Option<DecodedFrame>> {
    let frame = reader.next_decoded()?;
    if let Some(DecodedFrame {
        image: DecodedImage::Cuda(_),
        ..
    }) = &frame
    {
        ctx.streams()
            .decode
            .synchronize()
            .map_err(cuda_err("NVDEC frame sync"))?;
    }
    Ok(frame)
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
    let nvenc = match codec {
        VideoCodec::H264 => "h264_nvenc",
        VideoCodec::Hevc => "hevc_nvenc",
        VideoCodec::Av1 => "av1_nvenc",
    };
    let why = rave_ffmpeg::hw_caps::nvenc_status()
        .into_iter()
        .find(|s| s.encoder == nvenc)
        .map_or_else(
            || format!("{nvenc} was not probed"),
            |s| match (s.available, s.reason) {
                (true, _) => format!(
                    "{nvenc} is available on this GPU, but RAVE's NVENC path is not implemented yet"
                ),
                (false, Some(reason)) => format!("{nvenc}: {reason}"),
                (false, None) => format!("{nvenc} is unavailable"),
            },
        );
    format!("{software} (software) from one page-locked device-to-host copy per frame; {why}")
}

/// A mapping stage whose conversion can fail (the GPU conversions).
pub fn try_convert<A, B>(
    rx: Receiver<A>,
    tx: Sender<B>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
    mut convert: impl FnMut(A) -> Result<B>,
) -> Result<()> {
    while let Some(item) = recv(&rx, cancel) {
        let t = Instant::now();
        let out = convert(item)?;
        metrics.record(t.elapsed());
        if !send(&tx, out, cancel) {
            break;
        }
    }
    Ok(())
}

/// Run the model on the GPU, collecting micro-batches of up to `batch.max_batch` frames (or
/// whatever arrived within the latency deadline of the first), in order.
pub fn infer(
    backend: &TensorRtBackend,
    batch: BatchConfig,
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

/// An inference error names the frames of the batch it hit.
fn name_frames(e: EngineError, first: u64, n: usize) -> EngineError {
    match e {
        EngineError::Inference(msg) => {
            EngineError::Inference(format!("{}: {msg}", describe_frames(first, n)))
        }
        other => other,
    }
}

/// One inference over `frames`; returns false when the next stage is gone.
fn run_batch(
    backend: &TensorRtBackend,
    frames: Vec<GpuFrame>,
    tx: &Sender<GpuFrame>,
    cancel: &CancelToken,
    metrics: &StageMetrics,
) -> Result<bool> {
    let first = frames[0].meta.index;
    let n = frames.len();
    let t = Instant::now();
    let outputs = if n == 1 {
        block_on(backend.process(frames[0].texture.clone())).map(|t| vec![t])
    } else {
        let inputs: Vec<GpuTexture> = frames.iter().map(|f| f.texture.clone()).collect();
        backend.process_batch(&inputs)
    }
    .map_err(|e| name_frames(e, first, n))?;
    let per_frame = t.elapsed() / n as u32;
    for (frame, texture) in frames.into_iter().zip(outputs) {
        metrics.record(per_frame);
        // The input texture goes back to the pool here, after the synchronous run read it.
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
    fn a_failed_batch_names_its_frames() {
        let e = name_frames(EngineError::Inference("out of memory".into()), 40, 4);
        assert_eq!(
            e.to_string(),
            EngineError::Inference("frames 40-43: out of memory".into()).to_string()
        );
        let other = name_frames(EngineError::Cancelled, 1, 2);
        assert_eq!(other.kind(), EngineError::Cancelled.kind());
    }

    #[test]
    fn host_copies_are_reported_per_frame() {
        let c = HostCopies::default();
        assert_eq!(c.report(0).per_frame, 0.0);
        for _ in 0..10 {
            c.downloads.fetch_add(1, Ordering::Relaxed);
        }
        let r = c.report(10);
        assert_eq!((r.uploads, r.downloads, r.per_frame), (0, 10, 1.0));
        c.uploads.fetch_add(10, Ordering::Relaxed);
        assert_eq!(c.report(10).per_frame, 2.0);
    }

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
