//! [`TiledGpu`]: a GPU backend run tile by tile ([`Tiled`] with [`DeviceTiles`]), itself a
//! [`GpuInference`] for the GPU stages. The inner backend times its runs, which are tiles
//! here; the stages want frames, so a frame's GPU time is the sum of its tiles' (the crop
//! and blend kernels between them are not in it).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rave_core::backend::{Interrupt, ModelMetadata, Upscaler};
use rave_core::batch::Batching;
use rave_core::error::Result;
use rave_core::tiling::Tiled;
use rave_core::types::GpuTexture;
use rave_tensorrt::backend_report::GpuBackendReport;
use rave_tensorrt::gpu_inference::GpuInference;

use crate::device_tiles::DeviceTiles;

/// A GPU backend behind device tiling.
pub struct TiledGpu {
    tiled: Tiled<Box<dyn GpuInference>, DeviceTiles>,
    times: Mutex<TileTimes>,
}

/// Tiles' GPU times folded into frames' times, in order.
#[derive(Debug, Default)]
struct TileTimes {
    /// Tiles of each frame sent and not yet timed, oldest first.
    frames: VecDeque<usize>,
    /// Times of tiles of the oldest frames not yet complete.
    tiles: Vec<Duration>,
}

impl TileTimes {
    /// Take in `tiles` (oldest first) and return the times of the frames now complete.
    fn fold(&mut self, tiles: Vec<Duration>) -> Vec<Duration> {
        self.tiles.extend(tiles);
        let mut done = Vec::new();
        while let Some(&n) = self.frames.front() {
            if self.tiles.len() < n {
                break;
            }
            done.push(self.tiles.drain(..n).sum());
            self.frames.pop_front();
        }
        done
    }
}

impl TiledGpu {
    /// `inner` run on tiles of `tile` (width, height) sharing at least `overlap` pixels.
    pub fn new(
        inner: Box<dyn GpuInference>,
        ops: DeviceTiles,
        tile: (u32, u32),
        overlap: u32,
    ) -> Result<Self> {
        Ok(Self {
            tiled: Tiled::new(inner, ops, tile, overlap)?,
            times: Mutex::default(),
        })
    }
}

impl Upscaler for TiledGpu {
    type Frame = GpuTexture;

    fn model(&self) -> Result<&ModelMetadata> {
        self.tiled.model()
    }

    fn engine_name(&self) -> &str {
        self.tiled.engine_name()
    }

    fn batching(&self) -> Batching {
        self.tiled.batching()
    }

    fn upscale(&self, frames: &[GpuTexture]) -> Result<Vec<GpuTexture>> {
        if let Some(first) = frames.first() {
            let plan = self.tiled.plan((first.width, first.height))?;
            let (across, down) = plan.grid();
            let mut times = self.times.lock().unwrap_or_else(|e| e.into_inner());
            times
                .frames
                .extend(std::iter::repeat_n((across * down) as usize, frames.len()));
        }
        self.tiled.upscale(frames)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        self.tiled.interrupter()
    }
}

impl GpuInference for TiledGpu {
    fn close(&self) -> Result<()> {
        self.tiled.inner().close()
    }

    /// The inner backend's, whose runs are tiles.
    fn counters(&self) -> GpuBackendReport {
        self.tiled.inner().counters()
    }

    fn finished_gpu_times(&self, wait: bool) -> Result<Option<Vec<Duration>>> {
        let mut times = self.times.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tiles) = self.tiled.inner().finished_gpu_times(wait)? else {
            // Synchronous runs: nothing to fold, so nothing is kept for it either.
            times.frames.clear();
            return Ok(None);
        };
        Ok(Some(times.fold(tiles)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_times_add_up_to_their_frames_times_in_order() {
        let ms = Duration::from_millis;
        let mut t = TileTimes {
            frames: [2, 3].into(),
            tiles: Vec::new(),
        };
        assert_eq!(t.fold(vec![ms(1)]), Vec::<Duration>::new());
        assert_eq!(t.fold(vec![ms(2), ms(3), ms(4)]), vec![ms(3)]);
        assert_eq!(t.fold(vec![ms(5)]), vec![ms(12)]);
        assert!(t.frames.is_empty() && t.tiles.is_empty());
    }
}
