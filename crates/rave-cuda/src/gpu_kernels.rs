//! `ColorKernels`: the conversions of `kernels.cu`, compiled once per process with NVRTC
//! and loaded into a GPU context, launched on a caller's stream. Over RAVE's own buffers
//! they take the buffers themselves, so each launch is ordered after the work that wrote
//! what it reads and before later users of what it writes (the buffers' events, on any
//! stream); over FFmpeg's CUDA frames, raw plane addresses (`unsafe`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use rave_core::color::ColorInfo;
use rave_core::error::{EngineError, Result};
use rave_core::types::PixelFormat;

use crate::coefficients::Coefficients;
use crate::nvrtc_once::{compiled_once, holds};
use crate::packing::{PlaneLayout, YuvLayout};

const SOURCE: &str = include_str!("kernels.cu");
const BLOCK: (u32, u32) = (32, 8);

/// The kernels' constant block (layout must match `struct Coef` in kernels.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct KernelCoef {
    kr: f32,
    kg: f32,
    kb: f32,
    y_off: f32,
    y_scale: f32,
    c_off: f32,
    c_scale: f32,
    max_code: f32,
    inv_y_scale: f32,
    inv_c_scale: f32,
    inv_kg: f32,
    cr_to_r: f32,
    cb_to_b: f32,
    cb_from_b: f32,
    cr_from_r: f32,
}

// SAFETY: KernelCoef is repr(C), Copy, made only of f32 fields, with the exact layout of the
// kernels' `struct Coef`, so passing it by value as a kernel parameter is sound.
unsafe impl DeviceRepr for KernelCoef {}

impl From<Coefficients> for KernelCoef {
    fn from(k: Coefficients) -> Self {
        Self {
            kr: k.kr,
            kg: k.kg,
            kb: k.kb,
            y_off: k.y_offset,
            y_scale: k.y_scale,
            c_off: k.c_offset,
            c_scale: k.c_scale,
            max_code: k.max_code,
            inv_y_scale: k.inv_y_scale,
            inv_c_scale: k.inv_c_scale,
            inv_kg: k.inv_kg,
            cr_to_r: k.cr_to_r,
            cb_to_b: k.cb_to_b,
            cb_from_b: k.cb_from_b,
            cr_from_r: k.cr_from_r,
        }
    }
}

/// A YUV surface in device memory: the base address of its planes and their layout.
#[derive(Debug, Clone, Copy)]
pub struct DeviceYuv {
    /// Device address of the Y plane.
    pub y: u64,
    /// Device address of U (or of UV when interleaved).
    pub u: u64,
    /// Device address of V (equal to `u` when interleaved).
    pub v: u64,
    /// Plane geometry.
    pub layout: PlaneLayout,
}

impl DeviceYuv {
    /// The planes of a surface packed from device address `base` as `layout` describes.
    pub fn from_base(base: u64, layout: PlaneLayout) -> Self {
        Self {
            y: base,
            u: base + layout.u_offset as u64,
            v: base + layout.v_offset as u64,
            layout,
        }
    }
}

fn compiled_ptx() -> Result<&'static Ptx> {
    static PTX: OnceLock<std::result::Result<Ptx, String>> = OnceLock::new();
    compiled_once(&PTX, SOURCE, "rave_color.cu", "colour kernels")
}

/// The colour kernels loaded into one context.
pub struct ColorKernels {
    functions: HashMap<String, CudaFunction>,
}

fn rgb_suffix(format: PixelFormat) -> Result<&'static str> {
    match format {
        PixelFormat::RgbPlanarF32 => Ok("f32"),
        PixelFormat::RgbPlanarF16 => Ok("f16"),
        other => Err(EngineError::FormatMismatch {
            expected: PixelFormat::RgbPlanarF32,
            actual: other,
        }),
    }
}

/// The scalar kernel arguments of a surface: coefficients, size and pitches.
struct Scalars {
    k: KernelCoef,
    w: i32,
    h: i32,
    yp: u64,
    cp: u64,
}

impl Scalars {
    fn new(l: &PlaneLayout, color: &ColorInfo) -> Self {
        Self {
            k: KernelCoef::from(Coefficients::new(
                color.matrix,
                color.range,
                l.layout.bit_depth(),
            )),
            w: l.width as i32,
            h: l.height as i32,
            yp: l.y_pitch as u64,
            cp: l.c_pitch as u64,
        }
    }
}

/// A launch's result as RAVE's error.
fn launched<T>(name: &str, r: std::result::Result<T, cudarc::driver::DriverError>) -> Result<()> {
    r.map(|_| ())
        .map_err(|e| EngineError::Cuda(format!("{name}: {e}")))
}

/// One thread per two horizontal chroma samples (up to 4x2 luma pixels).
fn launch_config(width: u32, height: u32) -> LaunchConfig {
    let (pairs, ch) = (width.div_ceil(2).div_ceil(2), height.div_ceil(2));
    LaunchConfig {
        grid_dim: (pairs.div_ceil(BLOCK.0), ch.div_ceil(BLOCK.1), 1),
        block_dim: (BLOCK.0, BLOCK.1, 1),
        shared_mem_bytes: 0,
    }
}

impl ColorKernels {
    /// Start compiling the kernels on another thread (NVRTC takes a noticeable part of a
    /// second), so that a later [`ColorKernels::load`] finds them compiled; an error is
    /// kept for that call to report.
    pub fn compile_in_background() {
        std::thread::spawn(|| {
            let _ = compiled_ptx();
        });
    }

    /// Compile (first call in the process) and load the kernels into `ctx`.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self> {
        let module = ctx
            .load_module(compiled_ptx()?.clone())
            .map_err(|e| EngineError::Cuda(format!("loading the colour kernels: {e}")))?;
        let mut functions = HashMap::new();
        for id in 0..4 {
            for t in ["f32", "f16"] {
                for name in [format!("yuv{id}_to_rgb_{t}"), format!("rgb_{t}_to_yuv{id}")] {
                    let f = module
                        .load_function(&name)
                        .map_err(|e| EngineError::Cuda(format!("kernel {name}: {e}")))?;
                    functions.insert(name, f);
                }
            }
        }
        Ok(Self { functions })
    }

    /// Registers per thread of each kernel, by name (for benchmarks and tuning).
    pub fn register_counts(&self) -> Vec<(String, i32)> {
        let mut out: Vec<(String, i32)> = self
            .functions
            .iter()
            .map(|(name, f)| (name.clone(), f.num_regs().unwrap_or(-1)))
            .collect();
        out.sort();
        out
    }

    /// Convert `src` to planar RGB (`format` F32 or F16, values in [0, 1]) at `dst`, which
    /// must hold `3 * width * height` elements. Queued on `stream`.
    ///
    /// # Safety
    ///
    /// `src`'s plane addresses must point at live device memory of `stream`'s context
    /// holding the surface its layout describes, and `dst` at live device memory of that
    /// context holding `3 * width * height` elements of `format`; neither may be freed or
    /// written by other work until the kernel queued here has run.
    pub unsafe fn yuv_to_rgb(
        &self,
        stream: &CudaStream,
        src: &DeviceYuv,
        dst: u64,
        format: PixelFormat,
        color: &ColorInfo,
    ) -> Result<()> {
        let l = &src.layout;
        let name = format!("yuv{}_to_rgb_{}", l.layout.kernel_id(), rgb_suffix(format)?);
        let Scalars { k, w, h, yp, cp } = Scalars::new(l, color);
        let f = &self.functions[&name];
        let mut args = stream.launch_builder(f);
        args.arg(&src.y)
            .arg(&yp)
            .arg(&src.u)
            .arg(&src.v)
            .arg(&cp)
            .arg(&dst)
            .arg(&w)
            .arg(&h)
            .arg(&k);
        // SAFETY: the argument list matches the kernel signature in kernels.cu; `src`
        // describes a surface of at least its layout's bytes and `dst` holds 3*w*h elements
        // of the chosen type, both valid device memory of this context (this function's
        // safety contract).
        launched(&name, unsafe {
            args.launch(launch_config(l.width, l.height))
        })
    }

    /// Convert planar RGB at `src` (`format` F32 or F16) to the YUV surface `dst`, at the
    /// bit depth of its layout. Queued on `stream`.
    ///
    /// # Safety
    ///
    /// As for [`ColorKernels::yuv_to_rgb`], with the roles swapped: `src` must hold
    /// `3 * width * height` elements of `format`, `dst`'s planes the surface its layout
    /// describes, all live device memory of `stream`'s context until the kernel has run.
    pub unsafe fn rgb_to_yuv(
        &self,
        stream: &CudaStream,
        src: u64,
        format: PixelFormat,
        dst: &DeviceYuv,
        color: &ColorInfo,
    ) -> Result<()> {
        let l = &dst.layout;
        let name = format!("rgb_{}_to_yuv{}", rgb_suffix(format)?, l.layout.kernel_id());
        let Scalars { k, w, h, yp, cp } = Scalars::new(l, color);
        let f = &self.functions[&name];
        let mut args = stream.launch_builder(f);
        args.arg(&src)
            .arg(&w)
            .arg(&h)
            .arg(&dst.y)
            .arg(&yp)
            .arg(&dst.u)
            .arg(&dst.v)
            .arg(&cp)
            .arg(&k);
        // SAFETY: as in `yuv_to_rgb`, with the roles of source and destination swapped.
        launched(&name, unsafe {
            args.launch(launch_config(l.width, l.height))
        })
    }
}

/// Bytes of planar RGB of `layout`'s size in `format`.
fn rgb_bytes(layout: &PlaneLayout, format: PixelFormat) -> usize {
    3 * layout.width as usize * layout.height as usize * format.element_bytes()
}

impl ColorKernels {
    /// Convert the packed surface in `src` (laid out as `layout`) to planar RGB in `dst`
    /// (`format` F32 or F16), queued on `stream` after the work that wrote `src` and before
    /// later users of either buffer, on whatever stream (their events).
    pub fn packed_to_rgb(
        &self,
        stream: &CudaStream,
        src: &CudaSlice<u8>,
        layout: PlaneLayout,
        dst: &mut CudaSlice<u8>,
        format: PixelFormat,
        color: &ColorInfo,
    ) -> Result<()> {
        holds(src.len(), layout.bytes)?;
        holds(dst.len(), rgb_bytes(&layout, format))?;
        let (base, _read) = src.device_ptr(stream);
        let (out, _written) = dst.device_ptr_mut(stream);
        // SAFETY: both buffers belong to this context and hold what the layout and format
        // need (checked above); the guards keep their events until the launch is queued,
        // so later users on other streams wait for this kernel.
        unsafe {
            self.yuv_to_rgb(
                stream,
                &DeviceYuv::from_base(base, layout),
                out,
                format,
                color,
            )
        }
    }

    /// Convert the planes of a surface not owned by RAVE (an NVDEC frame) to planar RGB in
    /// `dst`, queued on `stream`, before later users of `dst` on any stream.
    ///
    /// # Safety
    /// As for [`ColorKernels::yuv_to_rgb`]'s source: `src` must describe live device memory
    /// of `stream`'s context, written before this point on `stream` (or on a stream it
    /// waits for) and not rewritten until the kernel queued here has run.
    pub unsafe fn surface_to_rgb(
        &self,
        stream: &CudaStream,
        src: &DeviceYuv,
        dst: &mut CudaSlice<u8>,
        format: PixelFormat,
        color: &ColorInfo,
    ) -> Result<()> {
        holds(dst.len(), rgb_bytes(&src.layout, format))?;
        let (out, _written) = dst.device_ptr_mut(stream);
        // SAFETY: `dst` holds the RGB frame (checked); `src` is the caller's promise.
        unsafe { self.yuv_to_rgb(stream, src, out, format, color) }
    }

    /// Convert planar RGB in `src` (`format`) to the planes of a surface not owned by RAVE
    /// (an encoder's CUDA surface), queued on `stream` after the work that wrote `src`.
    ///
    /// # Safety
    /// As for [`ColorKernels::rgb_to_yuv`]'s destination: `dst` must describe live device
    /// memory of `stream`'s context, not read or written by other work until the kernel
    /// queued here has run.
    pub unsafe fn rgb_to_surface(
        &self,
        stream: &CudaStream,
        src: &CudaSlice<u8>,
        format: PixelFormat,
        dst: &DeviceYuv,
        color: &ColorInfo,
    ) -> Result<()> {
        holds(src.len(), rgb_bytes(&dst.layout, format))?;
        let (rgb, _read) = src.device_ptr(stream);
        // SAFETY: `src` holds the RGB frame (checked); `dst` is the caller's promise.
        unsafe { self.rgb_to_yuv(stream, rgb, format, dst, color) }
    }

    /// Convert planar RGB in `src` (`format`) to the packed surface `dst` laid out as
    /// `layout`, queued on `stream` after the work that wrote `src`, before later users.
    pub fn rgb_to_packed(
        &self,
        stream: &CudaStream,
        src: &CudaSlice<u8>,
        format: PixelFormat,
        dst: &mut CudaSlice<u8>,
        layout: PlaneLayout,
        color: &ColorInfo,
    ) -> Result<()> {
        holds(src.len(), rgb_bytes(&layout, format))?;
        holds(dst.len(), layout.bytes)?;
        let (rgb, _read) = src.device_ptr(stream);
        let (base, _written) = dst.device_ptr_mut(stream);
        // SAFETY: as in `packed_to_rgb`, with the roles of the buffers swapped.
        unsafe {
            self.rgb_to_yuv(
                stream,
                rgb,
                format,
                &DeviceYuv::from_base(base, layout),
                color,
            )
        }
    }
}

/// The layouts the kernels handle, for tests and benchmarks.
pub const ALL_LAYOUTS: [YuvLayout; 4] = [
    YuvLayout::Nv12,
    YuvLayout::P010,
    YuvLayout::Yuv420p8,
    YuvLayout::Yuv420p16,
];
