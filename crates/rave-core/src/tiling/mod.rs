//! Cutting a frame into overlapping tiles for a model that cannot take it whole (a VRAM
//! budget, or a fixed input size), and blending the upscaled tiles back so that no seam
//! shows (issue 13). The plan is pure geometry, the same for every engine: tiles of one size
//! (a fixed-size model gets exactly its size), at least `overlap` input pixels shared by
//! neighbours, spread evenly so that the last tile ends at the border rather than shrinks.
//! Each tile's output is weighted by a ramp across the parts it shares with a neighbour
//! (zero at its own edge, where the model saw padding, one where the neighbour's edge is),
//! and the weighted sums are divided by the weights' sum. Host blending of planar f32 RGB
//! is here; a device one follows the same weights. [`Tiled`] runs any backend this way.
//!
//! A model that takes only sides that are multiples of a block (a pixel-unshuffle stage)
//! gets tiles of such sides: where the frame is narrower than one, the tile reaches past
//! its right or bottom border and reads the frame mirrored there (as PyTorch's "reflect"
//! padding, which Real-ESRGAN's own inference pads with), and what the model makes of the
//! part outside the frame is dropped from the blend.

use std::ops::Range;

mod host_blend;
pub mod seam_check;
mod tiled;

pub use host_blend::HostBlend;
pub use tiled::{HostTiles, TileOps, Tiled};

/// Input pixels neighbouring tiles share at least, unless asked otherwise: on a 150x90
/// picture-like frame through the CPU reference of the SRVGGNetCompact and RRDBNet fixtures,
/// tiles of 64x64 came within 59.8 and 58.5 dB of the whole frame, 48x40 within 55.7 and
/// 53.7 dB, their seams no worse than the rest (crates/rave-native/tests/tiling_reference.rs).
pub const DEFAULT_OVERLAP: u32 = 16;

/// One tile: the input rectangle the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Left column in the input.
    pub x: u32,
    /// Top row in the input.
    pub y: u32,
    /// Width (the plan's tile width: the frame's, or the frame's padded to the model's
    /// multiple, when the frame is narrower).
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// The tiles of one frame size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TilePlan {
    /// Input frame width and height.
    pub frame: (u32, u32),
    /// Tile width and height (at most the frame's, padded to the plan's multiple).
    pub tile: (u32, u32),
    /// Input pixels neighbouring tiles share, at least (a border tile may share more).
    pub overlap: u32,
    /// Tile starts along x and along y; the tiles are every pair, row by row.
    columns: Vec<u32>,
    rows: Vec<u32>,
}

/// Starts of tiles of `tile` pixels over `len` sharing at least `overlap`: as few tiles as
/// that allows, spread evenly from 0 to `len - tile` (so every pair shares about the same,
/// none a sliver more than another).
fn starts(len: u32, tile: u32, overlap: u32) -> Vec<u32> {
    if tile >= len {
        return vec![0];
    }
    let step = tile - overlap;
    let n = (len - overlap).div_ceil(step).max(2);
    let span = u64::from(len - tile);
    (0..n)
        .map(|i| (span * u64::from(i) / u64::from(n - 1)) as u32)
        .collect()
}

/// Where position `i` (at or past 0) of a side of `len` pixels reads: itself inside the
/// side, mirrored about its last pixel past it (the last pixel not repeated), back and forth
/// for a pad longer than the side.
pub fn mirror(i: u32, len: u32) -> u32 {
    if i < len {
        return i;
    }
    if len == 1 {
        return 0;
    }
    let period = 2 * (len - 1);
    let r = i % period;
    if r < len { r } else { period - r }
}

impl TilePlan {
    /// Tiles of `tile` (width, height) over a `frame` sharing `overlap` input pixels; the
    /// tile is clipped to the frame. Refused: empty sizes, an overlap of half a tile or more
    /// (a tile would add nothing new) where the frame needs more than one tile.
    pub fn new(frame: (u32, u32), tile: (u32, u32), overlap: u32) -> Result<Self, String> {
        Self::padded(frame, tile, overlap, (1, 1))
    }

    /// As [`TilePlan::new`] for a model whose tile sides are multiples of `multiple`
    /// (width, height; a fixed-size model's are its size): a tile is clipped to the frame
    /// padded to the next multiple (so it may reach past the frame's right and bottom, where
    /// [`TilePlan::extract`] mirrors it). Refused too: a tile that is no multiple.
    pub fn padded(
        frame: (u32, u32),
        tile: (u32, u32),
        overlap: u32,
        multiple: (u32, u32),
    ) -> Result<Self, String> {
        let (fw, fh) = frame;
        let (mw, mh) = multiple;
        if fw == 0 || fh == 0 || tile.0 == 0 || tile.1 == 0 || mw == 0 || mh == 0 {
            return Err(format!(
                "tiles of {}x{} over a {fw}x{fh} frame",
                tile.0, tile.1
            ));
        }
        let cover = |len: u32, m: u32| len.div_ceil(m).saturating_mul(m);
        let (tw, th) = (tile.0.min(cover(fw, mw)), tile.1.min(cover(fh, mh)));
        if !tw.is_multiple_of(mw) || !th.is_multiple_of(mh) {
            return Err(format!(
                "tiles of {tw}x{th} for a model that takes sides that are multiples of {mw}x{mh}"
            ));
        }
        for (t, len) in [(tw, fw), (th, fh)] {
            if t < len && 2 * overlap >= t {
                return Err(format!(
                    "a tile overlap of {overlap} px needs tiles over {} px (these are {tw}x{th})",
                    2 * overlap
                ));
            }
        }
        Ok(Self {
            frame,
            tile: (tw, th),
            overlap,
            columns: starts(fw, tw, overlap),
            rows: starts(fh, th, overlap),
        })
    }

    /// The tiles, row by row.
    pub fn tiles(&self) -> Vec<Tile> {
        let (width, height) = self.tile;
        self.rows
            .iter()
            .flat_map(|&y| {
                self.columns.iter().map(move |&x| Tile {
                    x,
                    y,
                    width,
                    height,
                })
            })
            .collect()
    }

    /// Tiles across and down.
    pub fn grid(&self) -> (u32, u32) {
        (self.columns.len() as u32, self.rows.len() as u32)
    }

    /// Whether the frame is one tile of its own size (nothing to cut or pad).
    pub fn is_whole(&self) -> bool {
        self.columns.len() == 1 && self.rows.len() == 1 && self.tile == self.frame
    }

    /// Whether the frame is one tile padded past its borders (a model of a side multiple
    /// the frame is not).
    pub fn is_padded_whole(&self) -> bool {
        self.columns.len() == 1 && self.rows.len() == 1 && self.tile != self.frame
    }

    /// The blending weights of tile `i` of [`TilePlan::tiles`] at output scale `scale`,
    /// along x and along y: its upscaled pixel (x, y) weighs `wx[x] * wy[y]`, as in
    /// [`TilePlan::blend`] (for a device blend to use the same). `i` must be below the
    /// number of tiles (it panics otherwise, like an index).
    pub fn tile_weights(&self, i: usize, scale: u32) -> (Vec<f32>, Vec<f32>) {
        let across = self.columns.len();
        (
            Self::axis_weights(&self.columns, i % across, self.tile.0, scale),
            Self::axis_weights(&self.rows, i / across, self.tile.1, scale),
        )
    }

    /// The blending weights along one axis of the tile starting at `starts[i]` of `len`
    /// pixels, at output scale `scale`: for each output position of the tile, a ramp up
    /// across what it shares with the tile before and down across what it shares with the
    /// tile after, 1 elsewhere (and at the frame's borders).
    fn axis_weights(starts: &[u32], i: usize, tile: u32, scale: u32) -> Vec<f32> {
        let n = (tile * scale) as usize;
        let mut w = vec![1.0f32; n];
        let start = starts[i];
        let end = start + tile;
        let mut ramp = |shared: Range<u32>, rising: bool| {
            let (a, b) = ((shared.start - start) * scale, (shared.end - start) * scale);
            let span = (b - a) as f32;
            for (k, v) in w[a as usize..b as usize].iter_mut().enumerate() {
                let t = (k as f32 + 0.5) / span;
                *v *= if rising { t } else { 1.0 - t };
            }
        };
        if i > 0 {
            let prev_end = starts[i - 1] + tile;
            ramp(start..prev_end.min(end), true);
        }
        if i + 1 < starts.len() {
            let next = starts[i + 1];
            ramp(next.max(start)..end, false);
        }
        w
    }

    /// Blend the upscaled tiles (`outputs[i]` planar `channels x (h * scale) x (w * scale)`
    /// of tile `i` of [`TilePlan::tiles`]) into the whole upscaled frame, planar: a
    /// [`HostBlend`] fed every tile in order.
    pub fn blend(
        &self,
        outputs: &[Vec<f32>],
        channels: usize,
        scale: u32,
    ) -> Result<Vec<f32>, String> {
        let count = self.columns.len() * self.rows.len();
        if outputs.len() != count {
            return Err(format!("{} tile outputs for {count} tiles", outputs.len()));
        }
        let mut blend = HostBlend::new(self, channels, scale);
        for (i, out) in outputs.iter().enumerate() {
            blend.add(i, out)?;
        }
        blend.finish()
    }

    /// Tile `tile`'s input, planar `channels x height x width`, cut from the planar frame
    /// `input`; where the tile reaches past the frame, the frame mirrored ([`mirror`]).
    pub fn extract(&self, input: &[f32], channels: usize, tile: &Tile) -> Vec<f32> {
        let (fw, fh) = (self.frame.0 as usize, self.frame.1 as usize);
        let (w, h) = (tile.width as usize, tile.height as usize);
        // The columns inside the frame are copied as a run, the rest read mirrored.
        let inside = w.min(fw.saturating_sub(tile.x as usize));
        let mut out = Vec::with_capacity(channels * w * h);
        for c in 0..channels {
            for y in 0..h as u32 {
                let row = c * fw * fh + mirror(tile.y + y, self.frame.1) as usize * fw;
                let at = row + tile.x as usize;
                out.extend_from_slice(&input[at..at + inside]);
                out.extend(
                    (inside as u32..w as u32)
                        .map(|x| input[row + mirror(tile.x + x, self.frame.0) as usize]),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_frame_evenly_ending_at_its_border() {
        assert_eq!(starts(100, 40, 8), vec![0, 30, 60]);
        assert_eq!(starts(100, 100, 8), vec![0]);
        assert_eq!(starts(64, 40, 8), vec![0, 24]);
        assert_eq!(starts(90, 40, 16), vec![0, 16, 33, 50]);
        // Every pixel is in a tile; neighbours share at least the overlap.
        for (len, tile, overlap) in [
            (150, 64, 8),
            (91, 32, 4),
            (1000, 256, 32),
            (33, 32, 15),
            (3840, 512, 16),
        ] {
            let s = starts(len, tile, overlap);
            assert_eq!(*s.last().unwrap() + tile, len);
            for pair in s.windows(2) {
                assert!(
                    pair[0] + tile >= pair[1] + overlap,
                    "{len} {tile} {overlap}: {s:?}"
                );
            }
        }
    }

    #[test]
    fn plans_refuse_what_cannot_tile() {
        assert!(TilePlan::new((0, 10), (4, 4), 0).is_err());
        assert!(TilePlan::new((100, 100), (32, 32), 16).is_err());
        // A frame smaller than the tile is one tile of the frame's size, any overlap.
        let p = TilePlan::new((20, 10), (64, 64), 16).unwrap();
        assert!(p.is_whole());
        assert_eq!(p.grid(), (1, 1));
        assert_eq!(
            TilePlan::new((150, 90), (64, 64), 16).unwrap().grid(),
            (3, 2)
        );
        assert_eq!(
            p.tiles(),
            vec![Tile {
                x: 0,
                y: 0,
                width: 20,
                height: 10
            }]
        );
    }

    #[test]
    fn a_pointwise_model_tiled_equals_it_untiled() {
        // A model that scales each pixel's value and repeats it scale x scale times (no
        // neighbourhood): every blend of its tiles is the untiled output, whatever the
        // weights, because the weights at a pixel sum to what they are divided by.
        let (w, h, s) = (37u32, 23u32, 2u32);
        let input: Vec<f32> = (0..3 * w * h).map(|i| (i % 97) as f32 / 97.0).collect();
        let model = |img: &[f32], iw: usize, ih: usize| -> Vec<f32> {
            let (ow, oh) = (iw * s as usize, ih * s as usize);
            let mut out = vec![0.0; 3 * ow * oh];
            for c in 0..3 {
                for y in 0..oh {
                    for x in 0..ow {
                        let v = img[(c * ih + y / s as usize) * iw + x / s as usize];
                        out[(c * oh + y) * ow + x] = 0.5 * v + 0.1;
                    }
                }
            }
            out
        };
        let whole = model(&input, w as usize, h as usize);
        for (tile, overlap) in [((16, 16), 4), ((10, 7), 3), ((37, 8), 2), ((64, 64), 0)] {
            let plan = TilePlan::new((w, h), tile, overlap).unwrap();
            let outs: Vec<Vec<f32>> = plan
                .tiles()
                .iter()
                .map(|t| {
                    model(
                        &plan.extract(&input, 3, t),
                        t.width as usize,
                        t.height as usize,
                    )
                })
                .collect();
            let blended = plan.blend(&outs, 3, s).unwrap();
            let worst = blended
                .iter()
                .zip(&whole)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{tile:?} overlap {overlap}: {worst}");
        }
    }

    #[test]
    fn a_block_models_plan_pads_the_frame_mirrored_and_blends_only_the_frame() {
        let mirrored: Vec<u32> = (0..9).map(|i| mirror(i, 4)).collect();
        assert_eq!(mirrored, [0, 1, 2, 3, 2, 1, 0, 1, 2]);
        assert_eq!((mirror(5, 1), mirror(2, 2), mirror(3, 2)), (0, 0, 1));
        // A 6x3 frame for a model of sides that are multiples of 4: one 8x4 tile.
        let plan = TilePlan::padded((6, 3), (64, 64), 16, (4, 4)).unwrap();
        assert!(plan.is_padded_whole() && !plan.is_whole());
        let tiles = plan.tiles();
        assert_eq!(
            tiles,
            vec![Tile {
                x: 0,
                y: 0,
                width: 8,
                height: 4
            }]
        );
        let frame: Vec<f32> = (0..18).map(|v| v as f32).collect();
        let cut = plan.extract(&frame, 1, &tiles[0]);
        #[rustfmt::skip]
        let expected = [
            0, 1, 2, 3, 4, 5, 4, 3,
            6, 7, 8, 9, 10, 11, 10, 9,
            12, 13, 14, 15, 16, 17, 16, 15,
            6, 7, 8, 9, 10, 11, 10, 9,
        ];
        assert_eq!(cut, expected.map(|v| v as f32));
        // The padded part of the output is dropped: the frame comes back as it was.
        assert_eq!(plan.blend(&[cut], 1, 1).unwrap(), frame);
        // A tile narrower than the frame must be a multiple itself.
        assert!(TilePlan::padded((100, 100), (30, 30), 4, (8, 8)).is_err());
        assert!(
            TilePlan::padded((6, 3), (8, 8), 0, (4, 4))
                .unwrap()
                .is_padded_whole()
        );
    }

    #[test]
    fn a_pointwise_model_tiled_and_padded_equals_it_untiled() {
        // Cut along x into tiles of 40, padded along y from 6 to 8 rows, upscaled x2.
        let (w, h, s) = (100u32, 6u32, 2usize);
        let input: Vec<f32> = (0..3 * w * h).map(|i| (i % 89) as f32 / 89.0).collect();
        let model = |img: &[f32], iw: usize, ih: usize| -> Vec<f32> {
            let mut out = vec![0.0; 3 * iw * s * ih * s];
            for c in 0..3 {
                for y in 0..ih * s {
                    for x in 0..iw * s {
                        out[(c * ih * s + y) * iw * s + x] = img[(c * ih + y / s) * iw + x / s];
                    }
                }
            }
            out
        };
        let plan = TilePlan::padded((w, h), (40, 40), 8, (8, 8)).unwrap();
        assert_eq!((plan.tile, plan.grid()), ((40, 8), (3, 1)));
        let outs: Vec<Vec<f32>> = plan
            .tiles()
            .iter()
            .map(|t| {
                let cut = plan.extract(&input, 3, t);
                model(&cut, t.width as usize, t.height as usize)
            })
            .collect();
        let blended = plan.blend(&outs, 3, s as u32).unwrap();
        let whole = model(&input, w as usize, h as usize);
        let worst = blended
            .iter()
            .zip(&whole)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-6, "{worst}");
    }

    #[test]
    fn the_weights_vanish_at_a_shared_edge_and_are_one_at_the_borders() {
        let plan = TilePlan::new((100, 10), (40, 10), 8).unwrap();
        let first = TilePlan::axis_weights(&plan.columns, 0, 40, 1);
        let last = TilePlan::axis_weights(&plan.columns, 2, 40, 1);
        assert_eq!(first[0], 1.0, "the frame's left border");
        assert!(first[39] < 0.1, "shared with the next tile");
        assert!(last[0] < 0.1 && last[39] == 1.0);
        assert!(plan.blend(&[vec![0.0; 3]], 3, 1).is_err(), "wrong count");
    }

    #[test]
    fn summing_tiles_with_their_weights_in_order_is_the_blend_bit_for_bit() {
        // What the device blend does (rave-cuda tile_kernels.cu): per tile, in order,
        // w = wx * wy, weight += w, sum += w * value; then sum / weight.
        let (w, h, s, ch) = (53u32, 29u32, 2u32, 3usize);
        let plan = TilePlan::new((w, h), (20, 12), 5).unwrap();
        let tiles = plan.tiles();
        assert_eq!((plan.grid().0 * plan.grid().1) as usize, tiles.len());
        let outs: Vec<Vec<f32>> = tiles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = ch * (t.width * s * t.height * s) as usize;
                (0..n)
                    .map(|k| ((k * 31 + i * 7) % 101) as f32 / 101.0)
                    .collect()
            })
            .collect();
        let (ow, oh) = ((w * s) as usize, (h * s) as usize);
        let (tw, th) = ((plan.tile.0 * s) as usize, (plan.tile.1 * s) as usize);
        let mut sum = vec![0.0f32; ch * ow * oh];
        let mut weight = vec![0.0f32; ow * oh];
        for (i, (t, out)) in tiles.iter().zip(&outs).enumerate() {
            let (wx, wy) = plan.tile_weights(i, s);
            assert_eq!((wx.len(), wy.len()), (tw, th));
            for ty in 0..th {
                for tx in 0..tw {
                    let p = (t.y as usize * s as usize + ty) * ow + t.x as usize * s as usize + tx;
                    let wt = wx[tx] * wy[ty];
                    weight[p] += wt;
                    for c in 0..ch {
                        sum[c * ow * oh + p] += wt * out[(c * th + ty) * tw + tx];
                    }
                }
            }
        }
        let summed: Vec<f32> = (0..ch * ow * oh)
            .map(|k| sum[k] / weight[k % (ow * oh)])
            .collect();
        let blended = plan.blend(&outs, ch, s).unwrap();
        assert!(
            summed
                .iter()
                .zip(&blended)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
    }
}
