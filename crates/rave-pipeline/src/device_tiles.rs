//! [`DeviceTiles`]: tiling's crop and blend on device frames (`GpuTexture`), the GPU's
//! [`TileOps`] for [`rave_core::tiling::Tiled`]. Each tile is cut into a pooled buffer, and
//! each upscaled tile is added into f32 sums as soon as the backend hands it back (so it
//! returns its output-ring slot at once), the sums divided into the blended frame once the
//! last tile is in: rave-cuda's `TileKernels`, everything queued on the inference stream,
//! where the backends write their outputs, so the stream orders each step after the one
//! before. The weights of a plan are uploaded once and kept while the plan stays the same.

use std::sync::{Arc, Mutex};

use rave_core::error::{EngineError, Result};
use rave_core::gpu::{GpuBuffer, GpuContext, cuda_err};
use rave_core::tiling::{Tile, TileOps, TilePlan};
use rave_core::types::{GpuTexture, PixelFormat};
use rave_cuda::tile_kernels::{BlendSums, TileKernels};

/// The device's tile operations on one GPU context.
pub struct DeviceTiles {
    ctx: Arc<GpuContext>,
    kernels: TileKernels,
    weights: Mutex<Option<Arc<PlanWeights>>>,
}

/// A plan's blending weights on the device: one buffer per tile column (along x) and per
/// tile row (along y).
struct PlanWeights {
    plan: TilePlan,
    scale: u32,
    columns: Vec<GpuBuffer>,
    rows: Vec<GpuBuffer>,
}

/// One frame's blend in progress on the device.
pub struct DeviceBlend {
    weights: Arc<PlanWeights>,
    sum: GpuBuffer,
    weight: GpuBuffer,
    /// The upscaled frame's (width, height).
    size: (u32, u32),
    /// The tiles' format (the first tile's; the others must match).
    format: Option<PixelFormat>,
    added: Vec<bool>,
}

/// Bytes of a planar RGB picture of `w x h` in `format`.
fn picture_bytes(w: u32, h: u32, format: PixelFormat) -> usize {
    3 * w as usize * h as usize * format.element_bytes()
}

/// An error unless `t` is a tightly packed planar RGB picture of `size`.
fn check_texture(t: &GpuTexture, size: (u32, u32), what: &str) -> Result<()> {
    let tight = t.width as usize * t.format.element_bytes();
    if (t.width, t.height) != size || t.pitch != tight {
        return Err(EngineError::DimensionMismatch(format!(
            "{what} is {}x{} with rows of {} bytes, expected {}x{} packed ({} bytes a row)",
            t.width,
            t.height,
            t.pitch,
            size.0,
            size.1,
            size.0 as usize * t.format.element_bytes()
        )));
    }
    Ok(())
}

impl DeviceTiles {
    /// The tile kernels loaded into `ctx` (compiled with NVRTC on the process's first use).
    pub fn new(ctx: Arc<GpuContext>) -> Result<Self> {
        let kernels = TileKernels::load(ctx.cuda())?;
        Ok(Self {
            ctx,
            kernels,
            weights: Mutex::new(None),
        })
    }

    /// `plan`'s weights at `scale` on the device, uploaded on the first frame of the plan.
    fn weights(&self, plan: &TilePlan, scale: u32) -> Result<Arc<PlanWeights>> {
        let mut kept = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = kept
            .as_ref()
            .filter(|w| w.plan == *plan && w.scale == scale)
        {
            return Ok(w.clone());
        }
        let (across, down) = plan.grid();
        let upload = |values: Vec<f32>| -> Result<GpuBuffer> {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let mut buffer = self.ctx.alloc_pooled(bytes.len())?;
            self.ctx
                .streams()
                .inference
                .memcpy_htod(&bytes, &mut buffer.slice_mut().slice_mut(..bytes.len()))
                .map_err(cuda_err("uploading tile weights"))?;
            Ok(buffer)
        };
        let columns = (0..across as usize)
            .map(|i| upload(plan.tile_weights(i, scale).0))
            .collect::<Result<Vec<_>>>()?;
        let rows = (0..down as usize)
            .map(|r| upload(plan.tile_weights(r * across as usize, scale).1))
            .collect::<Result<Vec<_>>>()?;
        let weights = Arc::new(PlanWeights {
            plan: plan.clone(),
            scale,
            columns,
            rows,
        });
        *kept = Some(weights.clone());
        Ok(weights)
    }
}

impl TileOps<GpuTexture> for DeviceTiles {
    type Blend = DeviceBlend;

    fn size(&self, frame: &GpuTexture) -> (u32, u32) {
        (frame.width, frame.height)
    }

    fn crop(&self, plan: &TilePlan, frame: &GpuTexture, tile: &Tile) -> Result<GpuTexture> {
        check_texture(frame, plan.frame, "a frame to tile")?;
        let stream = &self.ctx.streams().inference;
        let mut dst =
            self.ctx
                .alloc_pooled(picture_bytes(tile.width, tile.height, frame.format))?;
        self.kernels.crop(
            stream,
            &frame.data,
            plan.frame,
            frame.format,
            tile,
            dst.slice_mut(),
        )?;
        Ok(GpuTexture {
            data: Arc::new(dst),
            width: tile.width,
            height: tile.height,
            pitch: tile.width as usize * frame.format.element_bytes(),
            format: frame.format,
        })
    }

    fn start(&self, plan: &TilePlan, scale: u32) -> Result<DeviceBlend> {
        let weights = self.weights(plan, scale)?;
        let size = (plan.frame.0 * scale, plan.frame.1 * scale);
        let (sum_bytes, weight_bytes) = BlendSums::bytes(size);
        let mut sum = self.ctx.alloc_pooled(sum_bytes)?;
        let mut weight = self.ctx.alloc_pooled(weight_bytes)?;
        BlendSums {
            sum: sum.slice_mut(),
            weight: weight.slice_mut(),
            size,
        }
        .clear(&self.ctx.streams().inference)?;
        let (across, down) = plan.grid();
        Ok(DeviceBlend {
            weights,
            sum,
            weight,
            size,
            format: None,
            added: vec![false; (across * down) as usize],
        })
    }

    fn add(&self, blend: &mut DeviceBlend, index: usize, tile: GpuTexture) -> Result<()> {
        let plan = &blend.weights.plan;
        let scale = blend.weights.scale;
        let across = plan.grid().0 as usize;
        let Some(seen) = blend.added.get_mut(index) else {
            return Err(EngineError::InvariantViolation(format!(
                "tile {index} of a plan of {} tiles",
                blend.added.len()
            )));
        };
        if std::mem::replace(seen, true) {
            return Err(EngineError::InvariantViolation(format!(
                "tile {index} blended twice"
            )));
        }
        let format = *blend.format.get_or_insert(tile.format);
        if tile.format != format {
            return Err(EngineError::FormatMismatch {
                expected: format,
                actual: tile.format,
            });
        }
        let size = (plan.tile.0 * scale, plan.tile.1 * scale);
        check_texture(&tile, size, "an upscaled tile")?;
        let placed = &plan.tiles()[index];
        let at = (placed.x * scale, placed.y * scale);
        let weights = &blend.weights;
        let stream = &self.ctx.streams().inference;
        // The tile may come from a backend that wrote it on another stream through cudarc
        // (its event); one that wrote through a raw address did so on this stream.
        tile.data.wait_for_writer(stream);
        self.kernels.accumulate(
            stream,
            &tile.data,
            format,
            size,
            at,
            (
                &weights.columns[index % across],
                &weights.rows[index / across],
            ),
            &mut BlendSums {
                sum: blend.sum.slice_mut(),
                weight: blend.weight.slice_mut(),
                size: blend.size,
            },
        )
    }

    fn finish(&self, mut blend: DeviceBlend) -> Result<GpuTexture> {
        let missing = blend.added.iter().filter(|a| !**a).count();
        let Some(format) = blend.format.filter(|_| missing == 0) else {
            return Err(EngineError::InvariantViolation(format!(
                "{missing} of {} tiles were not blended",
                blend.added.len()
            )));
        };
        let (w, h) = blend.size;
        let mut out = self.ctx.alloc_pooled(picture_bytes(w, h, format))?;
        self.kernels.normalize(
            &self.ctx.streams().inference,
            &BlendSums {
                sum: blend.sum.slice_mut(),
                weight: blend.weight.slice_mut(),
                size: blend.size,
            },
            out.slice_mut(),
            format,
        )?;
        Ok(GpuTexture {
            data: Arc::new(out),
            width: w,
            height: h,
            pitch: w as usize * format.element_bytes(),
            format,
        })
    }
}
