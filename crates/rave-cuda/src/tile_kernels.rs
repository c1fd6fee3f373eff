//! `TileKernels`: tiling on the device (issue 13), the kernels of `tile_kernels.cu` compiled
//! once per process with NVRTC and loaded into a GPU context. `crop` cuts a tile's input out
//! of a planar RGB frame; `accumulate` adds one upscaled tile into an f32 sum with the tile's
//! weights from [`rave_core::tiling::TilePlan::tile_weights`]; `normalize` divides the sums by the weights into
//! the blended frame. Called tile by tile in the plan's order on one stream they give what
//! [`rave_core::tiling::TilePlan::blend`] gives on the host (bit for bit in F32). Every buffer is one of RAVE's
//! and is passed whole, so each launch is ordered after the work that wrote what it reads
//! and before later writers of what it reads or writes, on any stream (the buffers' events;
//! cudarc keeps one read event a buffer, so of several readers on different streams only
//! the last is waited for by a writer: keep a blend's launches on one stream).

use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use rave_core::error::{EngineError, Result};
use rave_core::tiling::Tile;
use rave_core::types::PixelFormat;

use crate::nvrtc_once::{compiled_once, holds};

const SOURCE: &str = include_str!("tile_kernels.cu");
const BLOCK: (u32, u32) = (32, 8);
/// Colour channels of the planar frames (RGB).
const CHANNELS: u32 = 3;

/// The tiling kernels, loaded into one context.
pub struct TileKernels {
    crop: [CudaFunction; 2],
    accumulate: [CudaFunction; 2],
    normalize: [CudaFunction; 2],
}

fn compiled_ptx() -> Result<&'static Ptx> {
    static PTX: OnceLock<std::result::Result<Ptx, String>> = OnceLock::new();
    compiled_once(&PTX, SOURCE, "rave_tiles.cu", "tile kernels")
}

/// 0 for F32, 1 for F16 (the kernels' order); other formats are not planar RGB.
fn type_index(format: PixelFormat) -> Result<usize> {
    match format {
        PixelFormat::RgbPlanarF32 => Ok(0),
        PixelFormat::RgbPlanarF16 => Ok(1),
        other => Err(EngineError::FormatMismatch {
            expected: PixelFormat::RgbPlanarF32,
            actual: other,
        }),
    }
}

/// Bytes of a planar RGB picture of `w x h` in `format`.
fn picture_bytes(w: u32, h: u32, format: PixelFormat) -> usize {
    CHANNELS as usize * w as usize * h as usize * format.element_bytes()
}

fn grid(w: u32, h: u32, z: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (w.div_ceil(BLOCK.0), h.div_ceil(BLOCK.1), z),
        block_dim: (BLOCK.0, BLOCK.1, 1),
        shared_mem_bytes: 0,
    }
}

fn int(v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| EngineError::DimensionMismatch(format!("{v} px is too large")))
}

fn launched(name: &str, r: std::result::Result<(), cudarc::driver::DriverError>) -> Result<()> {
    r.map_err(|e| EngineError::Cuda(format!("{name}: {e}")))
}

/// The sums a blend adds tiles into: per output pixel, one f32 per channel and one weight.
pub struct BlendSums<'a> {
    /// `3 x out_w x out_h` f32, zeroed before the first tile.
    pub sum: &'a mut CudaSlice<u8>,
    /// `out_w x out_h` f32, zeroed before the first tile.
    pub weight: &'a mut CudaSlice<u8>,
    /// The upscaled frame's width and height.
    pub size: (u32, u32),
}

impl BlendSums<'_> {
    /// Bytes of the sum and of the weight buffers for an output of `size`.
    pub fn bytes(size: (u32, u32)) -> (usize, usize) {
        let pixels = size.0 as usize * size.1 as usize * 4;
        (CHANNELS as usize * pixels, pixels)
    }

    /// Zero the sums before a frame's first tile, queued on `stream` (a pooled buffer holds
    /// whatever it held before).
    pub fn clear(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        self.check()?;
        stream
            .memset_zeros(&mut *self.sum)
            .and_then(|_| stream.memset_zeros(&mut *self.weight))
            .map_err(|e| EngineError::Cuda(format!("zeroing the blend's sums: {e}")))
    }

    fn check(&self) -> Result<()> {
        let (sum, weight) = Self::bytes(self.size);
        holds(self.sum.len(), sum)?;
        holds(self.weight.len(), weight)
    }
}

impl TileKernels {
    /// Compile (first call in the process) and load the kernels into `ctx`.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self> {
        let module = ctx
            .load_module(compiled_ptx()?.clone())
            .map_err(|e| EngineError::Cuda(format!("loading the tile kernels: {e}")))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| EngineError::Cuda(format!("kernel {name}: {e}")))
        };
        Ok(Self {
            crop: [f("tile_crop_f32")?, f("tile_crop_f16")?],
            accumulate: [f("tile_accumulate_f32")?, f("tile_accumulate_f16")?],
            normalize: [f("tile_normalize_f32")?, f("tile_normalize_f16")?],
        })
    }

    /// Cut `tile` out of the planar `frame` (`frame_size`, `format`) into `dst`, planar
    /// `3 x tile.height x tile.width`, queued on `stream`; a tile that starts inside the
    /// frame may reach past its right and bottom border, where the frame is read mirrored.
    pub fn crop(
        &self,
        stream: &CudaStream,
        frame: &CudaSlice<u8>,
        frame_size: (u32, u32),
        format: PixelFormat,
        tile: &Tile,
        dst: &mut CudaSlice<u8>,
    ) -> Result<()> {
        let t = type_index(format)?;
        let (fw, fh) = frame_size;
        let ends = tile
            .x
            .checked_add(tile.width)
            .zip(tile.y.checked_add(tile.height));
        // The kernel's mirror doubles a side in i32: frames up to half of i32's range.
        let long = fw > i32::MAX as u32 / 2 || fh > i32::MAX as u32 / 2;
        if long
            || ends.is_none_or(|(right, bottom)| {
                tile.x >= fw || tile.y >= fh || right > i32::MAX as u32 || bottom > i32::MAX as u32
            })
        {
            return Err(EngineError::DimensionMismatch(format!(
                "tile {}x{} at ({}, {}) starts outside the {fw}x{fh} frame",
                tile.width, tile.height, tile.x, tile.y
            )));
        }
        holds(frame.len(), picture_bytes(fw, fh, format))?;
        holds(dst.len(), picture_bytes(tile.width, tile.height, format))?;
        let (fw_, fh_, x, y, w, h) = (
            int(fw)?,
            int(fh)?,
            int(tile.x)?,
            int(tile.y)?,
            int(tile.width)?,
            int(tile.height)?,
        );
        let mut args = stream.launch_builder(&self.crop[t]);
        args.arg(frame)
            .arg(&fw_)
            .arg(&fh_)
            .arg(dst)
            .arg(&x)
            .arg(&y)
            .arg(&w)
            .arg(&h);
        // SAFETY: the arguments match `tile_crop_*` in tile_kernels.cu; the frame holds its
        // whole picture and `dst` the tile's (checked above), and the kernel reads only
        // mirrored positions inside the frame, so every read and write is in bounds.
        launched("tile_crop", unsafe {
            args.launch(grid(tile.width, tile.height, CHANNELS))
                .map(|_| ())
        })
    }

    /// Add the upscaled tile `output` (planar `3 x h x w` of `format`, `size` = (w, h)),
    /// placed at output pixel `at`, into `sums` with its weights `wx` (w f32) and `wy` (h f32,
    /// from [`rave_core::tiling::TilePlan::tile_weights`]), queued on `stream`; a padded
    /// tile that starts inside the output may reach past it, where it is left out.
    #[allow(clippy::too_many_arguments)]
    pub fn accumulate(
        &self,
        stream: &CudaStream,
        output: &CudaSlice<u8>,
        format: PixelFormat,
        size: (u32, u32),
        at: (u32, u32),
        weights: (&CudaSlice<u8>, &CudaSlice<u8>),
        sums: &mut BlendSums<'_>,
    ) -> Result<()> {
        let t = type_index(format)?;
        let (w, h) = size;
        let (ow, oh) = sums.size;
        let ends = at.0.checked_add(w).zip(at.1.checked_add(h));
        if ends.is_none_or(|(right, bottom)| {
            at.0 >= ow || at.1 >= oh || right > i32::MAX as u32 || bottom > i32::MAX as u32
        }) {
            return Err(EngineError::DimensionMismatch(format!(
                "upscaled tile {w}x{h} at ({}, {}) starts outside the {ow}x{oh} output",
                at.0, at.1
            )));
        }
        sums.check()?;
        holds(output.len(), picture_bytes(w, h, format))?;
        holds(weights.0.len(), w as usize * 4)?;
        holds(weights.1.len(), h as usize * 4)?;
        let (w_, h_, ow_, oh_, x, y, c) = (
            int(w)?,
            int(h)?,
            int(ow)?,
            int(oh)?,
            int(at.0)?,
            int(at.1)?,
            int(CHANNELS)?,
        );
        let mut args = stream.launch_builder(&self.accumulate[t]);
        args.arg(output)
            .arg(&w_)
            .arg(&h_)
            .arg(&mut *sums.sum)
            .arg(&mut *sums.weight)
            .arg(&ow_)
            .arg(&oh_)
            .arg(&x)
            .arg(&y)
            .arg(weights.0)
            .arg(weights.1)
            .arg(&c);
        // SAFETY: the arguments match `tile_accumulate_*`; the tile, its weights and the
        // sums hold what the sizes need (checked above), and the kernel writes only the
        // tile's pixels inside the output.
        launched("tile_accumulate", unsafe {
            args.launch(grid(w, h, 1)).map(|_| ())
        })
    }

    /// Divide `sums` by their weights into `dst`, the blended planar frame of `format`,
    /// queued on `stream`.
    pub fn normalize(
        &self,
        stream: &CudaStream,
        sums: &BlendSums<'_>,
        dst: &mut CudaSlice<u8>,
        format: PixelFormat,
    ) -> Result<()> {
        let t = type_index(format)?;
        let (ow, oh) = sums.size;
        sums.check()?;
        holds(dst.len(), picture_bytes(ow, oh, format))?;
        let (ow_, oh_, c) = (int(ow)?, int(oh)?, int(CHANNELS)?);
        let mut args = stream.launch_builder(&self.normalize[t]);
        args.arg(&*sums.sum)
            .arg(&*sums.weight)
            .arg(dst)
            .arg(&ow_)
            .arg(&oh_)
            .arg(&c);
        // SAFETY: the arguments match `tile_normalize_*`; the sums and `dst` hold the
        // output's pictures (checked above).
        launched("tile_normalize", unsafe {
            args.launch(grid(ow, oh, 1)).map(|_| ())
        })
    }
}
