//! [`Tiled`]: any [`Upscaler`] run tile by tile, itself an [`Upscaler`]. Each frame is cut by
//! a [`TilePlan`], the tiles run through the inner backend in batches of up to its
//! `max_batch`, and the upscaled tiles are blended back. Cutting and blending a frame kind is
//! a [`TileOps`]: the host's ([`HostTiles`]) is here; a device one (CUDA crop and blend
//! kernels on `GpuTexture`) plugs in the same way, so tiling is written once for every engine.

use std::sync::Arc;

use super::{HostBlend, Tile, TilePlan};
use crate::backend::{Interrupt, ModelMetadata, Upscaler};
use crate::batch::Batching;
use crate::error::{EngineError, Result};
use crate::frame::RgbImage;

/// Cutting tiles out of frames of one kind and blending upscaled tiles back, tile by tile
/// as they come (so a frame's upscaled tiles need not all be held at once: on the GPU each
/// holds a slot of the backend's output ring).
pub trait TileOps<F>: Send + Sync {
    /// One frame's blend in progress.
    type Blend: Send;
    /// The frame's (width, height).
    fn size(&self, frame: &F) -> (u32, u32);
    /// Tile `tile` of `plan` cut out of `frame` (a frame of `plan.frame`'s size).
    fn crop(&self, plan: &TilePlan, frame: &F, tile: &Tile) -> Result<F>;
    /// An empty blend for a frame of `plan` upscaled by `scale`.
    fn start(&self, plan: &TilePlan, scale: u32) -> Result<Self::Blend>;
    /// Add the upscaled tile `index` (of [`TilePlan::tiles`]) into `blend`; the tile is
    /// dropped after.
    fn add(&self, blend: &mut Self::Blend, index: usize, tile: F) -> Result<()>;
    /// The whole upscaled frame, once every tile was added.
    fn finish(&self, blend: Self::Blend) -> Result<F>;
}

/// Host frames' tile operations: planar f32 RGB through [`TilePlan::extract`] and
/// [`TilePlan::blend`].
#[derive(Debug, Default, Clone, Copy)]
pub struct HostTiles;

/// An error unless `image` is a whole planar RGB image of `w` x `h`.
fn check_image(image: &RgbImage, (w, h): (u32, u32), what: &str) -> Result<()> {
    if (image.width, image.height) != (w, h) || image.data.len() != image.plane_len() * 3 {
        return Err(EngineError::DimensionMismatch(format!(
            "{what} is {}x{} with {} samples, expected {w}x{h} with {}",
            image.width,
            image.height,
            image.data.len(),
            3 * w as usize * h as usize
        )));
    }
    Ok(())
}

impl TileOps<RgbImage> for HostTiles {
    type Blend = (HostBlend, (u32, u32));

    fn size(&self, frame: &RgbImage) -> (u32, u32) {
        (frame.width, frame.height)
    }

    fn crop(&self, plan: &TilePlan, frame: &RgbImage, tile: &Tile) -> Result<RgbImage> {
        check_image(frame, plan.frame, "a frame to tile")?;
        RgbImage::new(tile.width, tile.height, plan.extract(&frame.data, 3, tile))
    }

    fn start(&self, plan: &TilePlan, scale: u32) -> Result<Self::Blend> {
        let out = (plan.frame.0 * scale, plan.frame.1 * scale);
        Ok((HostBlend::new(plan, 3, scale), out))
    }

    fn add(&self, (blend, _): &mut Self::Blend, index: usize, tile: RgbImage) -> Result<()> {
        if tile.data.len() != tile.plane_len() * 3 {
            return Err(EngineError::DimensionMismatch(format!(
                "an upscaled tile of {}x{} holds {} samples",
                tile.width,
                tile.height,
                tile.data.len()
            )));
        }
        blend
            .add(index, &tile.data)
            .map_err(EngineError::DimensionMismatch)
    }

    fn finish(&self, (blend, (w, h)): Self::Blend) -> Result<RgbImage> {
        let data = blend.finish().map_err(EngineError::InvariantViolation)?;
        RgbImage::new(w, h, data)
    }
}

/// `inner` run on overlapping tiles of one size, blended back: it takes frames of any size
/// the tiles cover (a fixed-size model thereby takes frames larger than its input).
pub struct Tiled<U, O> {
    inner: U,
    ops: O,
    tile: (u32, u32),
    overlap: u32,
    /// What the inner model's tile sides must be multiples of (width, height).
    multiple: (u32, u32),
    meta: ModelMetadata,
}

impl<U, O> Tiled<U, O>
where
    U: Upscaler,
    O: TileOps<U::Frame>,
{
    /// `inner` on tiles of `tile` (width, height) input pixels sharing at least `overlap`.
    /// Refused: an empty tile, an overlap of half the tile or more both ways (the plan
    /// refuses it along an axis a frame needs several tiles on: a frame as thin as the tile
    /// is one tile that way), a tile the model does not take.
    pub fn new(inner: U, ops: O, tile: (u32, u32), overlap: u32) -> Result<Self> {
        let (tw, th) = tile;
        if tw == 0 || th == 0 {
            return Err(EngineError::Config(format!(
                "tiles of {tw}x{th}: a tile is at least 1x1"
            )));
        }
        if 2 * u64::from(overlap) >= u64::from(tw.max(th)) {
            return Err(EngineError::Config(format!(
                "a tile overlap of {overlap} px needs tiles over {} px (these are {tw}x{th})",
                2 * u64::from(overlap)
            )));
        }
        let model = inner.model()?;
        if !model.accepts(tw, th) {
            return Err(EngineError::Config(format!(
                "model {} does not take {tw}x{th} tiles (it takes {:?}..{:?}, height x width)",
                model.name, model.min_input_hw, model.max_input_hw
            )));
        }
        // Any frame: a tile is clipped to a frame smaller than it (padded to the model's
        // multiple, or to a fixed-size model's size), and a frame larger than it is cut into
        // tiles.
        let multiple = model.tile_multiples();
        let meta = ModelMetadata {
            min_input_hw: (1, 1),
            max_input_hw: (u32::MAX, u32::MAX),
            fixed_batch: None,
            side_multiple: 1,
            ..model.clone()
        };
        Ok(Self {
            inner,
            ops,
            tile,
            overlap,
            multiple,
            meta,
        })
    }

    /// The backend the tiles run through.
    pub fn inner(&self) -> &U {
        &self.inner
    }

    /// The plan that cuts frames of `size` (width, height).
    pub fn plan(&self, size: (u32, u32)) -> Result<TilePlan> {
        TilePlan::padded(size, self.tile, self.overlap, self.multiple).map_err(EngineError::Config)
    }
}

impl<U, O> Upscaler for Tiled<U, O>
where
    U: Upscaler,
    O: TileOps<U::Frame>,
{
    type Frame = U::Frame;

    fn model(&self) -> Result<&ModelMetadata> {
        Ok(&self.meta)
    }

    fn engine_name(&self) -> &str {
        self.inner.engine_name()
    }

    /// As many frames a call as the inner backend takes; their tiles are run together.
    fn batching(&self) -> Batching {
        self.inner.batching()
    }

    fn upscale(&self, frames: &[U::Frame]) -> Result<Vec<U::Frame>> {
        let Some(first) = frames.first() else {
            return Ok(Vec::new());
        };
        self.batching().admits(frames.len())?;
        let size = self.ops.size(first);
        if let Some(other) = frames.iter().map(|f| self.ops.size(f)).find(|s| *s != size) {
            return Err(EngineError::DimensionMismatch(format!(
                "one batch holds {}x{} and {}x{} frames",
                size.0, size.1, other.0, other.1
            )));
        }
        let plan = self.plan(size)?;
        if plan.is_whole() {
            return self.inner.upscale(frames);
        }
        let tiles = plan.tiles();
        let scale = self.meta.scale;
        let mut blends = frames
            .iter()
            .map(|_| self.ops.start(&plan, scale))
            .collect::<Result<Vec<_>>>()?;
        // Every frame's tiles in order, run in batches of what the inner backend takes;
        // each batch is cut just before it runs and blended as soon as it is back.
        let jobs: Vec<(usize, usize)> = (0..frames.len())
            .flat_map(|f| (0..tiles.len()).map(move |t| (f, t)))
            .collect();
        for batch in jobs.chunks(self.inner.batching().max_batch.max(1)) {
            let cut = batch
                .iter()
                .map(|&(f, t)| self.ops.crop(&plan, &frames[f], &tiles[t]))
                .collect::<Result<Vec<_>>>()?;
            let out = self.inner.upscale(&cut).map_err(|e| match e {
                // A model that takes whole frames may still refuse small tiles (pooling or
                // strided layers leave nothing of them): say what to change.
                EngineError::Inference(m) => EngineError::Inference(format!(
                    "{m} (on tiles of {}x{}: a model that downsamples inside needs larger tiles; give a larger --tile, or --tile auto)",
                    plan.tile.0, plan.tile.1
                )),
                e => e,
            })?;
            drop(cut);
            if out.len() != batch.len() {
                return Err(EngineError::InvariantViolation(format!(
                    "{} upscaled tiles for {}",
                    out.len(),
                    batch.len()
                )));
            }
            for (&(f, t), tile) in batch.iter().zip(out) {
                self.ops.add(&mut blends[f], t, tile)?;
            }
        }
        blends
            .into_iter()
            .map(|blend| self.ops.finish(blend))
            .collect()
    }

    /// The inner backend's: a tile in flight is interrupted like a frame.
    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        self.inner.interrupter()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::backend::InterruptFlag;
    use crate::types::PixelFormat;

    /// A pointwise x2 "model" (each pixel's value mapped and repeated 2x2), fixed to one
    /// input size or dynamic, recording the size and count of every call.
    struct Pointwise {
        meta: ModelMetadata,
        max_batch: usize,
        calls: Mutex<Vec<(usize, (u32, u32))>>,
        flag: Arc<InterruptFlag>,
    }

    impl Pointwise {
        fn new(fixed: Option<(u32, u32)>, max_batch: usize) -> Self {
            let (min, max) = match fixed {
                Some((w, h)) => ((h, w), (h, w)),
                None => ((1, 1), (u32::MAX, u32::MAX)),
            };
            Self {
                meta: ModelMetadata {
                    name: "pointwise".into(),
                    scale: 2,
                    input_name: "input".into(),
                    output_name: "output".into(),
                    input_channels: 3,
                    min_input_hw: min,
                    max_input_hw: max,
                    tensor_format: PixelFormat::RgbPlanarF32,
                    fixed_batch: fixed.map(|_| 1),
                    side_multiple: 1,
                },
                max_batch,
                calls: Mutex::default(),
                flag: Arc::default(),
            }
        }

        fn one(img: &RgbImage) -> RgbImage {
            let (w, h) = (img.width as usize, img.height as usize);
            let mut out = Vec::with_capacity(12 * w * h);
            for c in 0..3 {
                for y in 0..2 * h {
                    for x in 0..2 * w {
                        out.push(0.5 * img.data[(c * h + y / 2) * w + x / 2] + 0.1);
                    }
                }
            }
            RgbImage::new(img.width * 2, img.height * 2, out).unwrap()
        }
    }

    impl Upscaler for Pointwise {
        type Frame = RgbImage;

        fn model(&self) -> Result<&ModelMetadata> {
            Ok(&self.meta)
        }

        fn engine_name(&self) -> &str {
            "pointwise"
        }

        fn batching(&self) -> Batching {
            Batching {
                max_batch: self.max_batch,
                ..Batching::default()
            }
        }

        fn upscale(&self, frames: &[RgbImage]) -> Result<Vec<RgbImage>> {
            self.batching().admits(frames.len())?;
            self.flag.check()?;
            let size = (frames[0].width, frames[0].height);
            assert!(self.meta.accepts(size.0, size.1), "{size:?}");
            self.calls.lock().unwrap().push((frames.len(), size));
            Ok(frames.iter().map(Self::one).collect())
        }

        fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
            Some(self.flag.clone())
        }
    }

    fn frame(w: u32, h: u32, seed: u32) -> RgbImage {
        let data = (0..3 * w * h)
            .map(|i| ((i * 31 + seed * 7) % 97) as f32 / 97.0)
            .collect();
        RgbImage::new(w, h, data).unwrap()
    }

    fn worst(a: &RgbImage, b: &RgbImage) -> f32 {
        assert_eq!((a.width, a.height), (b.width, b.height));
        a.data
            .iter()
            .zip(&b.data)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn a_fixed_size_model_upscales_larger_frames_tile_by_tile_in_batches() {
        let tiled = Tiled::new(Pointwise::new(Some((16, 16)), 3), HostTiles, (16, 16), 4).unwrap();
        let frames = [frame(37, 23, 1), frame(37, 23, 2)];
        let out = tiled.upscale(&frames).unwrap();
        for (f, o) in frames.iter().zip(&out) {
            let w = worst(o, &Pointwise::one(f));
            assert!(w < 1e-5, "tiled differs from whole by {w}");
        }
        let plan = TilePlan::new((37, 23), (16, 16), 4).unwrap();
        let calls = tiled.inner().calls.lock().unwrap();
        assert!(
            calls.iter().all(|&(n, size)| n <= 3 && size == (16, 16)),
            "{calls:?}"
        );
        let tiles: usize = calls.iter().map(|c| c.0).sum();
        assert_eq!(
            tiles,
            2 * plan.tiles().len(),
            "every tile of both frames, once"
        );
        assert_eq!(
            calls.len(),
            tiles.div_ceil(3),
            "batches filled up to max_batch"
        );
    }

    #[test]
    fn the_wrapper_takes_any_frame_its_tiles_cover() {
        let tiled = Tiled::new(Pointwise::new(Some((16, 16)), 1), HostTiles, (16, 16), 4).unwrap();
        let meta = tiled.model().unwrap();
        assert!(meta.accepts(37, 23) && meta.accepts(16, 16) && meta.accepts(4000, 3000));
        assert!(meta.accepts(15, 23), "narrower than one tile: padded to it");
        assert_eq!((meta.scale, meta.fixed_batch), (2, None));
        // A 10x7 frame through the 16x16 model: one tile, the frame mirrored past its
        // borders, the padding dropped: what the model makes of the frame itself.
        let f = frame(10, 7, 3);
        let out = tiled.upscale(std::slice::from_ref(&f)).unwrap();
        assert_eq!(out[0], Pointwise::one(&f));
        assert_eq!(*tiled.inner().calls.lock().unwrap(), [(1, (16, 16))]);
        assert_eq!(tiled.engine_name(), "pointwise");
        assert_eq!(tiled.batching().max_batch, 1);
    }

    #[test]
    fn a_frame_within_one_tile_runs_whole() {
        let tiled = Tiled::new(Pointwise::new(None, 2), HostTiles, (64, 64), 16).unwrap();
        let f = frame(20, 10, 3);
        let out = tiled.upscale(std::slice::from_ref(&f)).unwrap();
        assert_eq!(out[0], Pointwise::one(&f));
        assert_eq!(*tiled.inner().calls.lock().unwrap(), [(1, (20, 10))]);
    }

    #[test]
    fn tilings_that_cannot_work_are_refused() {
        let fixed = || Pointwise::new(Some((16, 16)), 2);
        let kind = |r: Result<Tiled<Pointwise, HostTiles>>| r.err().map(|e| e.kind());
        assert_eq!(
            kind(Tiled::new(fixed(), HostTiles, (16, 16), 8)),
            Some("config")
        );
        // An overlap too wide for one side only is the plan's to refuse, on a frame that
        // needs several tiles that way; a frame as thin as the tile runs.
        let thin = Tiled::new(Pointwise::new(None, 2), HostTiles, (64, 12), 8).unwrap();
        let f = frame(150, 12, 4);
        let out = thin.upscale(std::slice::from_ref(&f)).unwrap();
        assert!(worst(&out[0], &Pointwise::one(&f)) < 1e-5);
        let tall = thin.upscale(&[frame(150, 40, 4)]);
        assert_eq!(tall.unwrap_err().kind(), "config");
        assert_eq!(
            kind(Tiled::new(fixed(), HostTiles, (0, 16), 0)),
            Some("config")
        );
        assert_eq!(
            kind(Tiled::new(fixed(), HostTiles, (12, 12), 2)),
            Some("config")
        );
        let tiled = Tiled::new(fixed(), HostTiles, (16, 16), 4).unwrap();
        let mixed = tiled.upscale(&[frame(37, 23, 1), frame(36, 23, 1)]);
        assert_eq!(mixed.unwrap_err().kind(), "dimension_mismatch");
        let three = [frame(37, 23, 1), frame(37, 23, 2), frame(37, 23, 3)];
        assert!(
            tiled.upscale(&three).is_err(),
            "more frames than the inner batch"
        );
        let bad = RgbImage {
            width: 37,
            height: 23,
            data: vec![0.0; 5],
        };
        assert_eq!(
            tiled.upscale(&[bad]).unwrap_err().kind(),
            "dimension_mismatch"
        );
    }

    /// A frame as a GPU backend hands it out: a slot of a small output ring, refused while
    /// all of the ring's slots are held (as `OutputRing` refuses).
    struct Slot {
        image: RgbImage,
        _held: Arc<()>,
    }

    /// A backend over [`Pointwise`] whose outputs hold one of `slots` ring slots each.
    struct Ringed {
        inner: Pointwise,
        ring: Vec<Arc<()>>,
    }

    impl Upscaler for Ringed {
        type Frame = Slot;

        fn model(&self) -> Result<&ModelMetadata> {
            self.inner.model()
        }

        fn engine_name(&self) -> &str {
            "ringed"
        }

        fn batching(&self) -> Batching {
            self.inner.batching()
        }

        fn upscale(&self, frames: &[Slot]) -> Result<Vec<Slot>> {
            let images: Vec<RgbImage> = frames.iter().map(|f| f.image.clone()).collect();
            let out = self.inner.upscale(&images)?;
            out.into_iter()
                .map(|image| {
                    let free = self.ring.iter().find(|s| Arc::strong_count(s) == 1);
                    let held = free.cloned().ok_or_else(|| {
                        EngineError::InvariantViolation("every ring slot is held".into())
                    })?;
                    Ok(Slot { image, _held: held })
                })
                .collect()
        }

        fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
            None
        }
    }

    struct SlotTiles;

    impl TileOps<Slot> for SlotTiles {
        type Blend = <HostTiles as TileOps<RgbImage>>::Blend;

        fn size(&self, frame: &Slot) -> (u32, u32) {
            HostTiles.size(&frame.image)
        }

        fn crop(&self, plan: &TilePlan, frame: &Slot, tile: &Tile) -> Result<Slot> {
            Ok(Slot {
                image: HostTiles.crop(plan, &frame.image, tile)?,
                _held: Arc::default(),
            })
        }

        fn start(&self, plan: &TilePlan, scale: u32) -> Result<Self::Blend> {
            HostTiles.start(plan, scale)
        }

        fn add(&self, blend: &mut Self::Blend, index: usize, tile: Slot) -> Result<()> {
            HostTiles.add(blend, index, tile.image)
        }

        fn finish(&self, blend: Self::Blend) -> Result<Slot> {
            Ok(Slot {
                image: HostTiles.finish(blend)?,
                _held: Arc::default(),
            })
        }
    }

    #[test]
    fn a_frame_of_more_tiles_than_the_backends_output_ring_is_blended_as_they_come() {
        // 3 ring slots, 2 tiles a call, 2 frames of 4x3 tiles each: only the tiles of the
        // call in hand may be held.
        let ringed = Ringed {
            inner: Pointwise::new(Some((16, 16)), 2),
            ring: (0..3).map(|_| Arc::new(())).collect(),
        };
        let tiled = Tiled::new(ringed, SlotTiles, (16, 16), 4).unwrap();
        let frames: Vec<Slot> = [frame(50, 37, 1), frame(50, 37, 2)]
            .into_iter()
            .map(|image| Slot {
                image,
                _held: Arc::default(),
            })
            .collect();
        assert_eq!(TilePlan::new((50, 37), (16, 16), 4).unwrap().grid(), (4, 3));
        let out = tiled.upscale(&frames[..2]).unwrap();
        for (f, o) in frames.iter().zip(&out) {
            let w = worst(&o.image, &Pointwise::one(&f.image));
            assert!(w < 1e-5, "tiled differs from whole by {w}");
        }
    }

    #[test]
    fn the_streamed_blend_is_the_plans_blend_bit_for_bit() {
        let plan = TilePlan::new((41, 29), (16, 12), 3).unwrap();
        let outs: Vec<Vec<f32>> = (0..plan.tiles().len())
            .map(|i| {
                (0..3 * 32 * 24)
                    .map(|k| ((k * 13 + i * 5) % 89) as f32 / 89.0)
                    .collect()
            })
            .collect();
        let whole = plan.blend(&outs, 3, 2).unwrap();
        let mut blend = HostTiles.start(&plan, 2).unwrap();
        // Added one by one, each dropped after (the plan's order, as `Tiled` adds them).
        for (i, o) in outs.iter().enumerate() {
            let tile = RgbImage::new(32, 24, o.clone()).unwrap();
            HostTiles.add(&mut blend, i, tile).unwrap();
        }
        let streamed = HostTiles.finish(blend).unwrap();
        assert_eq!((streamed.width, streamed.height), (82, 58));
        assert!(
            streamed
                .data
                .iter()
                .zip(&whole)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        let mut twice = HostTiles.start(&plan, 2).unwrap();
        let tile = || RgbImage::new(32, 24, outs[0].clone()).unwrap();
        HostTiles.add(&mut twice, 0, tile()).unwrap();
        assert!(HostTiles.add(&mut twice, 0, tile()).is_err(), "added twice");
        assert!(HostTiles.finish(twice).is_err(), "tiles missing");
    }

    #[test]
    fn interrupting_the_wrapper_interrupts_the_backend_it_wraps() {
        let tiled = Tiled::new(Pointwise::new(None, 1), HostTiles, (16, 16), 4).unwrap();
        let handle = tiled.interrupter().expect("the inner backend's");
        handle.interrupt();
        let err = tiled.upscale(&[frame(37, 23, 1)]).unwrap_err();
        assert_eq!(err.kind(), EngineError::Cancelled.kind());
    }
}
