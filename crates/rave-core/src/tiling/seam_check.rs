//! Measuring a tiled upscale against the whole frame's: PSNR, and whether the seams show
//! (the worst error on the rows and columns where tiles meet against the worst elsewhere),
//! with a picture-like test frame. Used by the tiling tests of every engine (the CPU's in CI,
//! the GPU's on the device), so they all judge seams the same way.

use super::TilePlan;
use crate::frame::RgbImage;

/// Smooth gradients, hard edges and a little noise (noise alone is the worst case no real
/// frame is).
pub fn picture(w: u32, h: u32) -> RgbImage {
    let (wu, hu) = (w as usize, h as usize);
    let mut data = vec![0.0f32; 3 * wu * hu];
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for c in 0..3 {
        for y in 0..hu {
            for x in 0..wu {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let noise = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                let edge = if (x / 11 + y / 7 + c) % 3 == 0 {
                    0.3
                } else {
                    0.0
                };
                let v = 0.2 + 0.5 * x as f32 / wu as f32 + edge + 0.05 * noise;
                data[(c * hu + y) * wu + x] = v.clamp(0.0, 1.0);
            }
        }
    }
    RgbImage::new(w, h, data).expect("3 planes of w x h")
}

/// PSNR (peak 1) over the whole output, and the largest error on the seam rows and columns
/// (where a tile starts or ends inside the frame, at output scale, and their neighbours)
/// against the largest elsewhere.
pub fn compare(
    got: &RgbImage,
    want: &RgbImage,
    plan: &TilePlan,
    s: u32,
) -> Result<(f64, f32, f32), String> {
    if (got.width, got.height, got.data.len()) != (want.width, want.height, want.data.len()) {
        return Err(format!(
            "a {}x{} picture against a {}x{} one",
            got.width, got.height, want.width, want.height
        ));
    }
    let (w, h) = (want.width as usize, want.height as usize);
    let lines = |edges: Vec<u32>, len: usize| -> Vec<usize> {
        let mut v: Vec<usize> = edges
            .into_iter()
            .map(|e| (e * s) as usize)
            .filter(|&v| v > 0 && v < len)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let tiles = plan.tiles();
    let cols = lines(tiles.iter().flat_map(|t| [t.x, t.x + t.width]).collect(), w);
    let rows = lines(
        tiles.iter().flat_map(|t| [t.y, t.y + t.height]).collect(),
        h,
    );
    let near = |v: usize, list: &[usize]| list.iter().any(|&e| v + 2 >= e && v <= e + 1);
    let (mut seam, mut rest, mut sq) = (0.0f32, 0.0f32, 0.0f64);
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                let i = (c * h + y) * w + x;
                let e = (got.data[i] - want.data[i]).abs();
                sq += f64::from(e) * f64::from(e);
                if near(x, &cols) || near(y, &rows) {
                    seam = seam.max(e);
                } else {
                    rest = rest.max(e);
                }
            }
        }
    }
    let mse = sq / got.data.len() as f64;
    let psnr = if mse == 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    };
    Ok((psnr, seam, rest))
}
