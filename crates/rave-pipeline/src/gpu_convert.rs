//! Getting frames onto and off the GPU: the preprocess kernel on an NVDEC surface in place or
//! after one upload of a host frame, and the postprocess kernel followed by one page-locked
//! download for the software encoder. Host copies of frame data are counted where they happen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rave_core::color::ColorInfo;
use rave_core::error::Result;
use rave_core::frame::{FrameMeta, HostYuvFrame};
use rave_core::gpu::{GpuContext, cuda_err};
use rave_core::types::{GpuTexture, PixelFormat};
use rave_cuda::gpu_kernels::{ColorKernels, DeviceYuv};
use rave_cuda::packing::{PlaneLayout, YuvLayout, pack, unpack};
use rave_ffmpeg::nvdec::CudaFrame;
use rave_ffmpeg::{DecodedFrame, DecodedImage};
use serde::Serialize;

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
            per_frame: crate::report::ratio((u + d) as f64, frames as f64),
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
        // SAFETY: `planes` are the decoder's surface, held (`surface`) until after the sync
        // below; `rgb` was allocated above for 3 * w * h elements of the tensor type.
        unsafe {
            self.kernels
                .yuv_to_rgb(stream, &planes, rgb.device_addr(), self.tensor, &self.color)
        }?;
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
        // SAFETY: `yuv` holds `layout.bytes` (allocated above) and is reused only by later
        // work on this same stream; `rgb` holds 3 * w * h elements of the tensor type.
        unsafe {
            self.kernels.yuv_to_rgb(
                stream,
                &DeviceYuv::from_base(yuv.device_addr(), layout),
                rgb.device_addr(),
                self.tensor,
                &self.color,
            )
        }?;
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
        // SAFETY: the texture (held by `frame` until the copy below completed) holds
        // 3 * w * h elements of its format; `yuv` was allocated above for `layout.bytes`.
        unsafe {
            self.kernels.rgb_to_yuv(
                stream,
                t.device_ptr(),
                t.format,
                &DeviceYuv::from_base(yuv.device_addr(), layout),
                &self.color,
            )
        }?;
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
