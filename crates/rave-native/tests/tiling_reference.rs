//! Tiling against the whole frame, through the CPU reference of real network fixtures
//! (SRVGGNetCompact and RRDBNet): the plan and blend of `rave_core::tiling` must leave no
//! visible seam. Runs without a GPU.

mod common;

use rave_core::tiling::{DEFAULT_OVERLAP, TilePlan};
use rave_native::recognise_file;
use rave_native::reference::{self, FeatureMap};

/// A 3-channel frame with smooth gradients, hard edges and a little noise (picture-like:
/// noise alone is the worst case no real frame is).
fn picture(w: usize, h: usize) -> FeatureMap {
    let mut f = FeatureMap::zeros(3, h, w);
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let noise = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                let edge = if (x / 11 + y / 7 + c) % 3 == 0 {
                    0.3
                } else {
                    0.0
                };
                let v = 0.2 + 0.5 * x as f32 / w as f32 + edge + 0.05 * noise;
                f.data[(c * h + y) * w + x] = v.clamp(0.0, 1.0);
            }
        }
    }
    f
}

/// PSNR over the whole output, and the largest error on the seam rows and columns against
/// the largest elsewhere.
fn compare(got: &[f32], want: &FeatureMap, seams: (&[usize], &[usize])) -> (f64, f32, f32) {
    let (psnr, _) = common::psnr_and_max_abs(got, &want.data);
    let (w, h) = (want.width, want.height);
    let near = |v: usize, list: &[usize]| list.iter().any(|&s| v + 1 >= s && v <= s + 1);
    let (mut seam, mut rest) = (0.0f32, 0.0f32);
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                let i = (c * h + y) * w + x;
                let e = (got[i] - want.data[i]).abs();
                if near(x, seams.0) || near(y, seams.1) {
                    seam = seam.max(e);
                } else {
                    rest = rest.max(e);
                }
            }
        }
    }
    (psnr, seam, rest)
}

#[test]
fn tiled_outputs_match_the_whole_frame_without_visible_seams() {
    let (w, h) = (150usize, 90usize);
    let x = picture(w, h);
    for name in ["compact_x2.onnx", "rrdb_x4_nf32.onnx"] {
        let net = recognise_file(&common::fixture(&format!("arch/{name}"))).unwrap();
        let s = net.scale as usize;
        let whole = reference::run(&net, &x);
        for (tile, overlap) in [
            ((64, 64), 4),
            ((64, 64), 8),
            ((64, 64), DEFAULT_OVERLAP),
            ((48, 40), DEFAULT_OVERLAP),
            ((37, 33), 12),
        ] {
            let plan = TilePlan::new((w as u32, h as u32), tile, overlap).unwrap();
            let tiles = plan.tiles();
            let outs: Vec<Vec<f32>> = tiles
                .iter()
                .map(|t| {
                    let cut = plan.extract(&x.data, 3, t);
                    let input =
                        FeatureMap::from_planar(3, t.height as usize, t.width as usize, cut)
                            .unwrap();
                    reference::run(&net, &input).data
                })
                .collect();
            let got = plan.blend(&outs, 3, s as u32).unwrap();
            // Seams: where a tile starts or ends inside the frame, at output scale.
            let lines = |at: &dyn Fn(&rave_core::tiling::Tile) -> (u32, u32), len: usize| {
                let mut v: Vec<usize> = tiles
                    .iter()
                    .flat_map(|t| {
                        let (a, b) = at(t);
                        [a as usize * s, b as usize * s - 1]
                    })
                    .filter(|&v| v > 0 && v + 1 < len * s)
                    .collect();
                v.sort();
                v.dedup();
                v
            };
            let cols = lines(&|t| (t.x, t.x + t.width), w);
            let rows = lines(&|t| (t.y, t.y + t.height), h);
            let (psnr, seam, rest) = compare(&got, &whole, (&cols, &rows));
            println!(
                "{name} {w}x{h}, tiles {}x{} overlap {overlap}: {} tiles, PSNR {psnr:.1} dB, worst error on seams {seam:.2e}, elsewhere {rest:.2e}",
                tile.0,
                tile.1,
                tiles.len()
            );
            if overlap >= 8 {
                assert!(
                    psnr >= 45.0,
                    "{name} {tile:?} overlap {overlap}: {psnr:.1} dB"
                );
            }
            if overlap == DEFAULT_OVERLAP {
                assert!(
                    seam <= rest,
                    "{name} {tile:?}: the seams ({seam:.2e}) are worse than the rest ({rest:.2e})"
                );
            }
        }
    }
}
