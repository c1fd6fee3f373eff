//! Decoding on NVDEC through FFmpeg's CUDA hardware acceleration, inside RAVE's own CUDA
//! context: the decoder writes each frame into device memory (NV12, or P010 for 10-bit) and
//! RAVE's preprocess kernel reads those surfaces directly — no copy through the host. Codecs,
//! profiles or sizes NVDEC cannot take make FFmpeg fall back to its software decoder on its own
//! (the frames then arrive in host memory and are counted apart).

use std::ffi::c_void;

use ffmpeg_next::ffi;
use rave_core::error::{EngineError, Result};

use crate::hw_caps::NvdecCap;
use crate::nvdec_route::{DecodeRoute, StreamShape};

/// FFmpeg's `AVCUDADeviceContext` (libavutil/hwcontext_cuda.h, unchanged since FFmpeg 4):
/// the CUDA context and stream FFmpeg works in.
#[repr(C)]
pub(crate) struct AvCudaDeviceContext {
    pub(crate) cuda_ctx: *mut c_void,
    pub(crate) stream: *mut c_void,
    internal: *mut c_void,
}

/// An FFmpeg CUDA device bound to a CUDA context the caller owns (RAVE's primary context).
pub struct CudaDevice {
    device: *mut ffi::AVBufferRef,
    /// What NVDEC on this device decodes, or why that is unknown (None: not asked).
    decode_caps: Option<std::result::Result<Vec<NvdecCap>, String>>,
}

// SAFETY: an AVBufferRef to a hardware device context is reference-counted with atomics and
// FFmpeg documents device contexts as usable from any thread.
unsafe impl Send for CudaDevice {}
// SAFETY: as above; RAVE only reads the reference.
unsafe impl Sync for CudaDevice {}

impl CudaDevice {
    /// The device's FFmpeg reference (borrowed: take a new reference to keep it).
    pub(crate) fn raw(&self) -> *mut ffi::AVBufferRef {
        self.device
    }

    /// A device using `cuda_ctx` and queuing FFmpeg's copies on `stream`.
    ///
    /// # Safety
    /// `cuda_ctx` must be a valid CUDA context and `stream` a stream of it (or null), both
    /// alive for as long as this device and every decoder and frame made with it.
    pub unsafe fn new(cuda_ctx: *mut c_void, stream: *mut c_void) -> Result<Self> {
        // SAFETY: plain allocation of a CUDA-type device context; checked for null.
        let device =
            unsafe { ffi::av_hwdevice_ctx_alloc(ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_CUDA) };
        if device.is_null() {
            return Err(EngineError::Decode(
                "FFmpeg could not allocate a CUDA device (this FFmpeg build has no CUDA support)"
                    .into(),
            ));
        }
        // SAFETY: `device` holds an AVHWDeviceContext whose `hwctx` is a zeroed
        // AVCUDADeviceContext; the caller vouches for the context and stream.
        let status = unsafe {
            let hw = (*device).data as *mut ffi::AVHWDeviceContext;
            let cuda = (*hw).hwctx as *mut AvCudaDeviceContext;
            (*cuda).cuda_ctx = cuda_ctx;
            (*cuda).stream = stream;
            ffi::av_hwdevice_ctx_init(device)
        };
        let device = Self {
            device,
            decode_caps: None,
        };
        if status < 0 {
            return Err(EngineError::Decode(format!(
                "FFmpeg could not set up CUDA decoding ({})",
                ffmpeg_next::Error::from(status)
            )));
        }
        Ok(device)
    }

    /// This device, deciding which streams it decodes by NVDEC's answers `caps` (or why
    /// they could not be had); without them FFmpeg decides as it opens each decoder.
    pub fn with_decode_caps(mut self, caps: std::result::Result<Vec<NvdecCap>, String>) -> Self {
        self.decode_caps = Some(caps);
        self
    }

    /// Where a stream of this shape is decoded with this device.
    pub fn route(&self, stream: &StreamShape) -> DecodeRoute {
        match &self.decode_caps {
            Some(caps) => crate::nvdec_route::route(stream, caps),
            None => DecodeRoute::Nvdec(None),
        }
    }

    /// Let the decoder of `ctx` (not yet opened) decode on NVDEC, keeping up to `extra_frames`
    /// more surfaces than it needs itself (frames held downstream).
    pub(crate) fn attach(&self, ctx: *mut ffi::AVCodecContext, extra_frames: i32) -> Result<()> {
        // SAFETY: `ctx` is an allocated, unopened codec context; it takes its own reference to
        // the device, released when the context is freed.
        unsafe {
            let reference = ffi::av_buffer_ref(self.device);
            if reference.is_null() {
                return Err(EngineError::Decode(
                    "out of memory referencing the CUDA device".into(),
                ));
            }
            (*ctx).hw_device_ctx = reference;
            (*ctx).get_format = Some(prefer_cuda);
            (*ctx).extra_hw_frames = extra_frames;
        }
        Ok(())
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // SAFETY: `device` is our own reference, released once.
        unsafe { ffi::av_buffer_unref(&mut self.device) };
    }
}

/// FFmpeg's format negotiation: CUDA surfaces when offered, else FFmpeg's default choice
/// (its software format).
unsafe extern "C" fn prefer_cuda(
    ctx: *mut ffi::AVCodecContext,
    formats: *const ffi::AVPixelFormat,
) -> ffi::AVPixelFormat {
    let mut p = formats;
    // SAFETY: FFmpeg passes a list terminated by AV_PIX_FMT_NONE.
    unsafe {
        while *p != ffi::AVPixelFormat::AV_PIX_FMT_NONE {
            if *p == ffi::AVPixelFormat::AV_PIX_FMT_CUDA {
                return *p;
            }
            p = p.add(1);
        }
        ffi::avcodec_default_get_format(ctx, formats)
    }
}

/// A decoded frame resident on the GPU: an FFmpeg frame reference to an NVDEC surface,
/// returned to the decoder's pool when dropped.
pub struct CudaFrame {
    frame: *mut ffi::AVFrame,
}

// SAFETY: the frame is a reference-counted FFmpeg frame owned by this value alone; its
// buffers are device memory and thread-agnostic.
unsafe impl Send for CudaFrame {}

/// Where a `CudaFrame`'s planes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaPlanes {
    /// Device address of the luma plane.
    pub y: u64,
    /// Device address of the interleaved chroma plane.
    pub uv: u64,
    /// Bytes per luma row.
    pub y_pitch: usize,
    /// Bytes per chroma row.
    pub uv_pitch: usize,
    /// 16-bit samples (P010/P016) rather than 8-bit (NV12).
    pub sixteen_bit: bool,
    /// Luma width and height.
    pub size: (u32, u32),
}

impl CudaFrame {
    /// Take a new reference to `frame` when it holds CUDA surfaces.
    ///
    /// # Safety
    /// `frame` must be a valid decoded frame.
    pub(crate) unsafe fn reference(frame: *const ffi::AVFrame) -> Option<Self> {
        // SAFETY: the caller passes a valid frame; av_frame_clone makes a new reference.
        unsafe {
            if (*frame).format != ffi::AVPixelFormat::AV_PIX_FMT_CUDA as i32 {
                return None;
            }
            let frame = ffi::av_frame_clone(frame);
            (!frame.is_null()).then_some(Self { frame })
        }
    }

    /// The planes (NV12 or P010 layout).
    pub fn planes(&self) -> Result<CudaPlanes> {
        // SAFETY: `frame` is a valid CUDA frame owned by this value.
        unsafe { planes_of(self.frame) }
    }
}

/// Where the planes of the CUDA frame `frame` are (NV12, or P010/P016).
///
/// # Safety
/// `frame` must be a valid frame of format CUDA.
pub(crate) unsafe fn planes_of(frame: *const ffi::AVFrame) -> Result<CudaPlanes> {
    // SAFETY: the caller's promise; its hw_frames_ctx describes its surfaces.
    unsafe {
        let f = &*frame;
        let frames_ctx = f.hw_frames_ctx;
        if frames_ctx.is_null() {
            return Err(EngineError::Decode(
                "CUDA frame without a frames context".into(),
            ));
        }
        let fc = &*((*frames_ctx).data as *const ffi::AVHWFramesContext);
        let sixteen_bit = match fc.sw_format {
            ffi::AVPixelFormat::AV_PIX_FMT_NV12 => false,
            ffi::AVPixelFormat::AV_PIX_FMT_P010LE | ffi::AVPixelFormat::AV_PIX_FMT_P016LE => true,
            other => {
                return Err(EngineError::Decode(format!(
                    "NVDEC produced {other:?} surfaces; RAVE reads NV12 and P010 (use --decoder software)"
                )));
            }
        };
        Ok(CudaPlanes {
            y: f.data[0] as u64,
            uv: f.data[1] as u64,
            y_pitch: f.linesize[0] as usize,
            uv_pitch: f.linesize[1] as usize,
            sixteen_bit,
            size: (f.width as u32, f.height as u32),
        })
    }
}

impl Drop for CudaFrame {
    fn drop(&mut self) {
        // SAFETY: our own reference, freed once.
        unsafe { ffi::av_frame_free(&mut self.frame) };
    }
}
