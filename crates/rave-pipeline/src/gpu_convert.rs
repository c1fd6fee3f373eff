//! Getting frames onto and off the GPU: the preprocess kernel on an NVDEC surface in place or
//! after one upload of a host frame, and the postprocess kernel followed by one page-locked
//! download for the software encoder. Host copies of frame data are counted where they happen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::frame::{FrameMeta, HostYuvFrame};
use rave_core::gpu::{GpuContext, GpuTimer, cuda_err, timeline};
use rave_core::types::{GpuTexture, PixelFormat};
use rave_cuda::gpu_kernels::{ColorKernels, DeviceYuv};
use rave_cuda::packing::{PlaneLayout, YuvLayout, pack, unpack};
use rave_ffmpeg::cuda_surfaces::CudaSurface;
use rave_ffmpeg::nvdec::{CudaFrame, CudaPlanes};
use rave_ffmpeg::{DecodedFrame, DecodedImage};
use serde::Serialize;

/// A frame resident on the GPU with its identity.
pub struct GpuFrame {
    /// Identity of the frame.
    pub meta: FrameMeta,
    /// Its pixels.
    pub texture: GpuTexture,
}

/// Host copies of frame data, counted where they happen, and the GPU contexts whose host
/// synchronisations the report counts.
#[derive(Debug, Default)]
pub struct HostCopies {
    uploads: AtomicU64,
    downloads: AtomicU64,
    contexts: std::sync::Mutex<Vec<Arc<GpuContext>>>,
}

/// Host copies and host synchronisations per frame, for the report.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct HostCopyReport {
    /// Host-to-device copies of frame data (software decode: 1 per frame).
    pub uploads: u64,
    /// Device-to-host copies of frame data (software encode: 1 per frame).
    pub downloads: u64,
    /// (uploads + downloads) / frames.
    pub per_frame: f64,
    /// Times the host waited for the GPU (stream synchronisations, and copies that wait by
    /// themselves) on the run's GPU contexts: with the native engine and NVDEC, one a frame
    /// (the download for the software encoder).
    pub host_syncs: u64,
    /// `host_syncs` / frames.
    pub host_syncs_per_frame: f64,
}

impl HostCopies {
    /// Count the host synchronisations of `ctx` in the report (once, however often called).
    pub fn watch(&self, ctx: &Arc<GpuContext>) {
        let mut contexts = self.contexts.lock().unwrap_or_else(|e| e.into_inner());
        if !contexts.iter().any(|c| Arc::ptr_eq(c, ctx)) {
            contexts.push(ctx.clone());
        }
    }

    /// The counts over `frames` frames.
    pub fn report(&self, frames: u64) -> HostCopyReport {
        let (u, d) = (
            self.uploads.load(Ordering::Relaxed),
            self.downloads.load(Ordering::Relaxed),
        );
        let syncs = self
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|c| c.host_syncs())
            .sum();
        HostCopyReport {
            uploads: u,
            downloads: d,
            per_frame: crate::report::ratio((u + d) as f64, frames as f64),
            host_syncs: syncs,
            host_syncs_per_frame: crate::report::ratio(syncs as f64, frames as f64),
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
    /// GPU time of the downloads.
    timer: GpuTimer,
    /// Whether the first frame's preprocess time was logged.
    logged_first: std::sync::atomic::AtomicBool,
}

fn layout_for(bit_depth: u8) -> YuvLayout {
    if bit_depth > 8 {
        YuvLayout::Yuv420p16
    } else {
        YuvLayout::Yuv420p8
    }
}

/// The planes of a CUDA surface (NVDEC's or an encoder's: NV12 or P010 at its pitches) as
/// the colour kernels take them.
fn surface_planes(p: &CudaPlanes) -> DeviceYuv {
    DeviceYuv {
        y: p.y,
        u: p.uv,
        v: p.uv,
        layout: PlaneLayout {
            layout: if p.sixteen_bit {
                YuvLayout::P010
            } else {
                YuvLayout::Nv12
            },
            width: p.size.0,
            height: p.size.1,
            y_pitch: p.y_pitch,
            c_pitch: p.uv_pitch,
            u_offset: 0,
            v_offset: 0,
            bytes: 0,
        },
    }
}

impl GpuConverter {
    /// Load the kernels into `ctx` for frames of `color`, producing `tensor` (F32 or F16).
    pub fn new(
        ctx: Arc<GpuContext>,
        color: ColorInfo,
        tensor: PixelFormat,
        copies: Arc<HostCopies>,
    ) -> Result<Self> {
        copies.watch(&ctx);
        let started = Instant::now();
        let kernels = ColorKernels::load(ctx.cuda())?;
        tracing::info!(
            "colour kernels compiled (or taken from the background compile) and loaded in {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
        Ok(Self {
            kernels,
            ctx,
            color,
            tensor,
            copies,
            pinned: std::sync::Mutex::new(None),
            timer: GpuTimer::default(),
            logged_first: Default::default(),
        })
    }

    /// Convert a decoded frame to the model's RGB: an NVDEC surface in place, a host frame
    /// after one upload.
    pub fn ingest(&self, frame: DecodedFrame) -> Result<GpuFrame> {
        timeline::host("pre_begin");
        match frame.image {
            DecodedImage::Host(image) => self.upload(HostYuvFrame {
                meta: frame.meta,
                image,
            }),
            DecodedImage::Cuda(surface) => self.convert_surface(frame.meta, surface),
        }
    }

    /// Convert an NVDEC surface (NV12 or P010) to the model's RGB, reading it in place. The
    /// kernel is ordered after FFmpeg's copy into the surface (queued on the decode stream
    /// before the frame was returned), and the decode stream after the kernel, so the
    /// surface is rewritten (FFmpeg's copies are queued there) only once it has been read;
    /// the host does not wait.
    fn convert_surface(&self, meta: FrameMeta, surface: CudaFrame) -> Result<GpuFrame> {
        let started = Instant::now();
        let p = surface.planes()?;
        let (w, h) = p.size;
        let streams = self.ctx.streams();
        let stream = &streams.preprocess;
        let n = 3 * w as usize * h as usize;
        let mut rgb = self.ctx.alloc_pooled(n * self.tensor.element_bytes())?;
        let planes = surface_planes(&p);
        let allocated = Instant::now();
        self.ctx.order_after(stream, &streams.decode)?;
        // SAFETY: `planes` are the decoder's surface, held (`surface`) until the decode
        // stream, where anything rewriting it is queued, has been ordered after this kernel
        // (below); the kernel itself runs after FFmpeg's copy into it (above).
        unsafe {
            self.kernels
                .surface_to_rgb(stream, &planes, rgb.slice_mut(), self.tensor, &self.color)
        }?;
        timeline::gpu("pre_done", stream);
        self.ctx.order_after(&streams.decode, stream)?;
        drop(surface);
        self.first_call("preprocess (NVDEC surface)", started, allocated);
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

    /// Log, once, how long the first frame's call took up to its allocation and in all
    /// (one-off costs, such as a kernel's first launch, show there).
    fn first_call(&self, what: &str, started: Instant, allocated: Instant) {
        if !self.logged_first.swap(true, Ordering::Relaxed) {
            tracing::info!(
                "first frame: {what}: {:.1} ms, of which {:.1} ms until its buffer was allocated",
                started.elapsed().as_secs_f64() * 1e3,
                (allocated - started).as_secs_f64() * 1e3
            );
        }
    }

    /// Upload a decoded frame (one host-to-device copy) and convert it to the model's RGB.
    /// The copy is from pageable memory, which CUDA stages after the stream's earlier work:
    /// the host waits for it, counted as a host synchronisation.
    pub fn upload(&self, frame: HostYuvFrame) -> Result<GpuFrame> {
        let started = Instant::now();
        let img = &frame.image;
        let layout = PlaneLayout::new(layout_for(img.bit_depth), img.width, img.height, 1);
        let host = pack(img, &layout);
        let stream = &self.ctx.streams().preprocess;
        let mut yuv = self.ctx.alloc_pooled(layout.bytes)?;
        let allocated = Instant::now();
        {
            let mut dst =
                yuv.slice_mut()
                    .try_slice_mut(..host.len())
                    .ok_or(EngineError::BufferTooSmall {
                        required: host.len(),
                        available: layout.bytes,
                    })?;
            stream
                .memcpy_htod(&host, &mut dst)
                .map_err(cuda_err("uploading a frame"))?;
        }
        self.ctx.count_host_sync();
        self.copies.uploads.fetch_add(1, Ordering::Relaxed);
        let n = 3 * img.width as usize * img.height as usize;
        let mut rgb = self.ctx.alloc_pooled(n * self.tensor.element_bytes())?;
        self.kernels.packed_to_rgb(
            stream,
            &yuv,
            layout,
            rgb.slice_mut(),
            self.tensor,
            &self.color,
        )?;
        timeline::gpu("pre_done", stream);
        self.first_call("upload and preprocess", started, allocated);
        // `yuv` goes back to the pool now; its events order the next writer after this
        // kernel's read.
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

    /// Convert an upscaled frame straight into an encoder's CUDA surface (NV12 or P010, its
    /// pitches), with no host copy: queued on the encode stream after the inference's write
    /// of the frame. FFmpeg's device stream (where the encoder and FFmpeg's transfers read
    /// the surface) is the encode stream itself for a pool on `gpu_stages::nvenc_device`;
    /// the decode stream (a pool on NVDEC's device) is ordered after the kernel; any other
    /// waits on the host.
    pub fn to_surface(&self, frame: &GpuFrame, surface: &mut CudaSurface) -> Result<()> {
        let t = &frame.texture;
        let p = surface.planes()?;
        if p.size != (t.width, t.height) {
            return Err(EngineError::DimensionMismatch(format!(
                "a {}x{} frame for a {}x{} surface",
                t.width, t.height, p.size.0, p.size.1
            )));
        }
        let planes = surface_planes(&p);
        let streams = self.ctx.streams();
        // SAFETY: the surface is held (`&mut`) by the caller, which hands it to the encoder
        // only after this call; FFmpeg reads it on the decode stream (its device's), which
        // is ordered after this kernel below.
        unsafe {
            self.kernels
                .rgb_to_surface(&streams.encode, &t.data, t.format, &planes, &self.color)
        }?;
        self.ctx.sample_device_memory();
        let device = surface.device_stream();
        if device == streams.encode.cu_stream() as usize {
            Ok(())
        } else if device == streams.decode.cu_stream() as usize {
            self.ctx.order_after(&streams.decode, &streams.encode)
        } else {
            self.ctx.host_sync(&streams.encode, "surface sync")
        }
    }

    /// Convert an upscaled frame to YUV at `bit_depth` and copy it to the host (one
    /// device-to-host copy), with how long that kept the stage busy: the GPU time of the
    /// kernel and the copy (timed from when the frame's inference is done) and the host's
    /// unpacking after it. The postprocess waits on the GPU for the inference output's
    /// write; the host waits once, for the copy (the one host synchronisation a frame).
    /// The texture is released only after the copy completed, so its ring slot is never
    /// rewritten while the kernel still reads it.
    pub fn download(&self, frame: GpuFrame, bit_depth: u8) -> Result<(HostYuvFrame, Duration)> {
        timeline::host("post_begin");
        let t = &frame.texture;
        let layout = PlaneLayout::new(layout_for(bit_depth), t.width, t.height, 1);
        let stream = &self.ctx.streams().encode;
        let mut yuv = self.ctx.alloc_pooled(layout.bytes)?;
        // The wait for the inference's write of this frame, before the timing starts.
        t.data.wait_for_writer(stream);
        let started = self.timer.start(stream)?;
        self.kernels.rgb_to_packed(
            stream,
            &t.data,
            t.format,
            yuv.slice_mut(),
            layout,
            &self.color,
        )?;
        timeline::gpu("post_convert_done", stream);
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.as_ref().is_none_or(|p| p.len() < layout.bytes) {
            // SAFETY: page-locked host memory whose contents are written by the copy below
            // before anything reads them. Cached (flags 0), not cudarc's default
            // write-combined memory: the host reads every byte of it (unpacking), and reads
            // of write-combined memory bypass the caches.
            let fresh = unsafe {
                self.ctx
                    .cuda()
                    .alloc_pinned_with_flags::<u8>(layout.bytes, 0)
            }
            .map_err(cuda_err("allocating page-locked memory"))?;
            *pinned = Some(fresh);
        }
        let host = pinned.as_mut().expect("allocated above");
        let src = yuv
            .try_slice(..layout.bytes)
            .ok_or(EngineError::BufferTooSmall {
                required: layout.bytes,
                available: yuv.capacity(),
            })?;
        stream
            .memcpy_dtoh(&src, host)
            .map_err(cuda_err("downloading a frame"))?;
        self.timer.end(stream, started)?;
        timeline::gpu("post_copy_done", stream);
        self.ctx.host_sync(stream, "download sync")?;
        timeline::host("post_synced");
        self.ctx.sample_device_memory();
        let unpacking = Instant::now();
        self.copies.downloads.fetch_add(1, Ordering::Relaxed);
        drop(frame.texture);
        let gpu: Duration = self.timer.finished(true)?.into_iter().sum();
        let bytes = host.as_slice().map_err(cuda_err("page-locked buffer"))?;
        let image = unpack(&bytes[..layout.bytes], &layout);
        timeline::host("post_unpacked");
        Ok((
            HostYuvFrame {
                meta: frame.meta,
                image,
            },
            gpu + unpacking.elapsed(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
