//! CUDA surfaces for NVENC on RAVE's own CUDA context: an FFmpeg hardware frames context
//! (NV12 for 8-bit output, P010 for 10-bit) made on the [`CudaDevice`] that NVDEC shares, whose
//! surfaces the postprocess kernel writes in place and the encoder reads (no host copy).
//! FFmpeg's own transfer brings a surface back to the host, for checks.

use std::ffi::c_void;

use ffmpeg_next::ffi;
use rave_core::error::{EngineError, Result};
use rave_core::frame::YuvFrame;

use crate::nvdec::{AvCudaDeviceContext, CudaDevice, CudaPlanes, planes_of};
use crate::nvenc_settings::NvencSurface;

/// The FFmpeg error `status` as RAVE's, saying what was being done.
fn ffmpeg_error(what: &str, status: i32) -> EngineError {
    EngineError::Encode(format!("{what}: {}", ffmpeg_next::Error::from(status)))
}

/// A pool of CUDA surfaces of one size and format (an `AVHWFramesContext`).
pub struct CudaSurfacePool {
    frames: *mut ffi::AVBufferRef,
    surface: NvencSurface,
    size: (u32, u32),
}

// SAFETY: a frames context is reference-counted with atomics, and FFmpeg's pools hand out
// buffers under their own lock; RAVE only reads the context after `new`.
unsafe impl Send for CudaSurfacePool {}
// SAFETY: as above.
unsafe impl Sync for CudaSurfacePool {}

impl CudaSurfacePool {
    /// A pool of `surface` frames of `width x height` on `device`, `initial` of them made
    /// up front (FFmpeg's pool grows past that on demand).
    pub fn new(
        device: &CudaDevice,
        surface: NvencSurface,
        (width, height): (u32, u32),
        initial: u32,
    ) -> Result<Self> {
        // SAFETY: allocation of a frames context on a live device reference; checked.
        let frames = unsafe { ffi::av_hwframe_ctx_alloc(device.raw()) };
        if frames.is_null() {
            return Err(EngineError::Encode(
                "FFmpeg could not allocate a CUDA frames context".into(),
            ));
        }
        let pool = Self {
            frames,
            surface,
            size: (width, height),
        };
        // SAFETY: `frames` holds a fresh AVHWFramesContext, set before its init.
        let status = unsafe {
            let fc = (*frames).data as *mut ffi::AVHWFramesContext;
            (*fc).format = ffi::AVPixelFormat::AV_PIX_FMT_CUDA;
            (*fc).sw_format = sw_format(surface);
            (*fc).width = width as i32;
            (*fc).height = height as i32;
            (*fc).initial_pool_size = initial as i32;
            ffi::av_hwframe_ctx_init(frames)
        };
        if status < 0 {
            return Err(ffmpeg_error(
                &format!("creating {width}x{height} {surface:?} CUDA surfaces"),
                status,
            ));
        }
        Ok(pool)
    }

    /// The CUDA context the surfaces live in (RAVE's, when the device was made on it).
    pub fn cuda_context(&self) -> *mut c_void {
        // SAFETY: an initialized frames context holds its CUDA device context.
        unsafe {
            let fc = &*((*self.frames).data as *const ffi::AVHWFramesContext);
            let device = &*fc.device_ctx;
            (*(device.hwctx as *const AvCudaDeviceContext)).cuda_ctx
        }
    }

    /// The surfaces' format.
    pub fn surface(&self) -> NvencSurface {
        self.surface
    }

    /// The surfaces' size.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// A surface from the pool (back to it when dropped).
    pub fn take(&self) -> Result<CudaSurface> {
        // SAFETY: a fresh frame, filled by the pool; both checked.
        unsafe {
            let mut frame = ffi::av_frame_alloc();
            if frame.is_null() {
                return Err(EngineError::Encode("out of memory for a frame".into()));
            }
            let status = ffi::av_hwframe_get_buffer(self.frames, frame, 0);
            if status < 0 {
                ffi::av_frame_free(&mut frame);
                return Err(ffmpeg_error("taking a CUDA surface from its pool", status));
            }
            Ok(CudaSurface { frame })
        }
    }

    /// The frames context (borrowed: take a new reference to keep it).
    pub(crate) fn raw(&self) -> *mut ffi::AVBufferRef {
        self.frames
    }
}

impl Drop for CudaSurfacePool {
    fn drop(&mut self) {
        // SAFETY: our own reference, released once (surfaces hold their own).
        unsafe { ffi::av_buffer_unref(&mut self.frames) };
    }
}

fn sw_format(surface: NvencSurface) -> ffi::AVPixelFormat {
    match surface {
        NvencSurface::Nv12 => ffi::AVPixelFormat::AV_PIX_FMT_NV12,
        NvencSurface::P010 => ffi::AVPixelFormat::AV_PIX_FMT_P010LE,
    }
}

/// One surface of a [`CudaSurfacePool`]: an FFmpeg frame whose planes are device memory.
pub struct CudaSurface {
    frame: *mut ffi::AVFrame,
}

// SAFETY: the frame is owned by this value alone; its buffers are device memory.
unsafe impl Send for CudaSurface {}

impl CudaSurface {
    /// Where its planes are (luma, then interleaved chroma).
    pub fn planes(&self) -> Result<CudaPlanes> {
        // SAFETY: a frame of format CUDA from a pool, owned by this value.
        unsafe { planes_of(self.frame) }
    }

    /// The CUDA stream of the FFmpeg device its pool was made on (where NVENC and FFmpeg's
    /// transfers read it), as its `CUstream` address.
    pub fn device_stream(&self) -> usize {
        // SAFETY: a frame of a pool has a frames context, which holds its CUDA device context.
        unsafe {
            let frames = &*((*(*self.frame).hw_frames_ctx).data as *const ffi::AVHWFramesContext);
            let device = &*frames.device_ctx;
            (*(device.hwctx as *const AvCudaDeviceContext)).stream as usize
        }
    }

    /// Whether it came from `pool`.
    pub fn is_from(&self, pool: &CudaSurfacePool) -> bool {
        // SAFETY: both are valid; only the contexts' data pointers are compared.
        unsafe {
            let own = (*self.frame).hw_frames_ctx;
            !own.is_null() && (*own).data == (*pool.raw()).data
        }
    }

    /// Stamp the frame's presentation time (in the encoder's time base).
    pub fn set_pts(&mut self, pts: i64) {
        // SAFETY: a plain field of the owned frame.
        unsafe { (*self.frame).pts = pts };
    }

    /// The frame, for the encoder.
    pub(crate) fn raw(&self) -> *mut ffi::AVFrame {
        self.frame
    }

    /// Copy the surface to the host with FFmpeg's own transfer (it waits for its copy), as
    /// RAVE's YUV 4:2:0 frame: chroma de-interleaved, P010's 10 bits taken from the high
    /// bits. The work that wrote the surface must be finished first.
    pub fn download(&self) -> Result<YuvFrame> {
        let planes = self.planes()?;
        let (w, h) = planes.size;
        // SAFETY: a fresh host frame, filled by FFmpeg from the valid surface; freed below.
        let mut host = unsafe { ffi::av_frame_alloc() };
        if host.is_null() {
            return Err(EngineError::Encode("out of memory for a frame".into()));
        }
        // SAFETY: `host` is empty; FFmpeg allocates it in the surface's software format.
        let status = unsafe { ffi::av_hwframe_transfer_data(host, self.frame, 0) };
        let image = match status {
            s if s < 0 => Err(ffmpeg_error("copying a CUDA surface to the host", s)),
            // SAFETY: `host` now holds a w x h NV12 or P010 frame.
            _ => Ok(unsafe { interleaved_to_planar(host, (w, h), planes.sixteen_bit) }),
        };
        // SAFETY: our own frame, freed once.
        unsafe { ffi::av_frame_free(&mut host) };
        image
    }
}

impl Drop for CudaSurface {
    fn drop(&mut self) {
        // SAFETY: our own reference, freed once (the surface goes back to its pool).
        unsafe { ffi::av_frame_free(&mut self.frame) };
    }
}

/// RAVE's planar frame from a host NV12 (8-bit) or P010 (10-bit) frame.
///
/// # Safety
/// `frame` must be a valid host frame of that format and size.
unsafe fn interleaved_to_planar(
    frame: *const ffi::AVFrame,
    (w, h): (u32, u32),
    sixteen_bit: bool,
) -> YuvFrame {
    let mut out = YuvFrame::zeroed(w, h, if sixteen_bit { 10 } else { 8 });
    let (cw, ch) = out.chroma_size();
    let (w, h) = (w as usize, h as usize);
    let sample = |row: *const u8, x: usize| -> u16 {
        // SAFETY: `row` is a line of the frame and `x` within it (callers' bounds).
        unsafe {
            match sixteen_bit {
                true => u16::from_le_bytes([*row.add(2 * x), *row.add(2 * x + 1)]) >> 6,
                false => u16::from(*row.add(x)),
            }
        }
    };
    // SAFETY: the caller's promise: planes 0 (luma) and 1 (interleaved chroma) of `h` and
    // `ch` lines, `linesize` bytes apart.
    unsafe {
        let f = &*frame;
        for y in 0..h {
            let row = f.data[0].offset(y as isize * f.linesize[0] as isize);
            for x in 0..w {
                out.y[y * w + x] = sample(row, x);
            }
        }
        for y in 0..ch {
            let row = f.data[1].offset(y as isize * f.linesize[1] as isize);
            for x in 0..cw {
                out.u[y * cw + x] = sample(row, 2 * x);
                out.v[y * cw + x] = sample(row, 2 * x + 1);
            }
        }
    }
    out
}
