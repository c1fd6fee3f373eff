//! [`HostBlend`]: one frame's upscaled tiles blended on the host as they come, each added
//! into weighted sums and dropped, the sums divided by the weights once the last is in. The
//! same operations in the same order as the device kernels (rave-cuda `tile_kernels.cu`),
//! so the two agree bit for bit in f32; [`TilePlan::blend`] is this over a whole list.

use super::TilePlan;

/// The running sums of one frame's blend (planar f32, `channels` planes).
#[derive(Debug, Clone)]
pub struct HostBlend {
    plan: TilePlan,
    channels: usize,
    scale: u32,
    /// Per tile column and row: its weights along x and y.
    columns: Vec<Vec<f32>>,
    rows: Vec<Vec<f32>>,
    sum: Vec<f32>,
    weight: Vec<f32>,
    added: Vec<bool>,
}

impl HostBlend {
    /// Empty sums for a frame of `plan` upscaled by `scale`, `channels` planes.
    pub fn new(plan: &TilePlan, channels: usize, scale: u32) -> Self {
        let (ow, oh) = (
            (plan.frame.0 * scale) as usize,
            (plan.frame.1 * scale) as usize,
        );
        let (across, down) = plan.grid();
        Self {
            columns: (0..across as usize)
                .map(|i| TilePlan::axis_weights(&plan.columns, i, plan.tile.0, scale))
                .collect(),
            rows: (0..down as usize)
                .map(|i| TilePlan::axis_weights(&plan.rows, i, plan.tile.1, scale))
                .collect(),
            sum: vec![0.0; channels * ow * oh],
            weight: vec![0.0; ow * oh],
            added: vec![false; (across * down) as usize],
            plan: plan.clone(),
            channels,
            scale,
        }
    }

    /// Add tile `i`'s upscaled output (planar `channels x (h * scale) x (w * scale)`).
    /// Refused: an index outside the plan, a tile added twice, the wrong number of values.
    pub fn add(&mut self, i: usize, out: &[f32]) -> Result<(), String> {
        let Some(seen) = self.added.get_mut(i) else {
            return Err(format!("tile {i} of a plan of {} tiles", self.added.len()));
        };
        if std::mem::replace(seen, true) {
            return Err(format!("tile {i} blended twice"));
        }
        let s = self.scale as usize;
        let (ow, oh) = (
            self.plan.frame.0 as usize * s,
            self.plan.frame.1 as usize * s,
        );
        let (tw, th) = (self.plan.tile.0 as usize * s, self.plan.tile.1 as usize * s);
        let ch = self.channels;
        if out.len() != ch * tw * th {
            return Err(format!(
                "tile {i}: {} values, a {tw}x{th} tile of {ch} channels has {}",
                out.len(),
                ch * tw * th
            ));
        }
        let across = self.columns.len();
        let (wx, wy) = (&self.columns[i % across], &self.rows[i / across]);
        let (x0, y0) = (
            self.plan.columns[i % across] as usize * s,
            self.plan.rows[i / across] as usize * s,
        );
        // A tile padded past the frame's border adds only what lies inside the frame.
        for ty in 0..th.min(oh - y0) {
            let row = (y0 + ty) * ow + x0;
            for tx in 0..tw.min(ow - x0) {
                let w = wx[tx] * wy[ty];
                self.weight[row + tx] += w;
                for c in 0..ch {
                    self.sum[c * ow * oh + row + tx] += w * out[(c * th + ty) * tw + tx];
                }
            }
        }
        Ok(())
    }

    /// The blended frame, planar; refused until every tile was added.
    pub fn finish(mut self) -> Result<Vec<f32>, String> {
        let missing = self.added.iter().filter(|a| !**a).count();
        if missing > 0 {
            return Err(format!(
                "{missing} of {} tiles were not blended",
                self.added.len()
            ));
        }
        let plane = self.weight.len();
        for (p, &w) in self.weight.iter().enumerate() {
            for c in 0..self.channels {
                self.sum[c * plane + p] /= w;
            }
        }
        Ok(self.sum)
    }
}
