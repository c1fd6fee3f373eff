//! Tiling against the whole frame, through the CPU reference of real network fixtures
//! (SRVGGNetCompact and RRDBNet): the plan and blend of `rave_core::tiling` must leave no
//! visible seam. Runs without a GPU.

mod common;

use rave_core::frame::RgbImage;
use rave_core::tiling::seam_check::{compare, picture};
use rave_core::tiling::{DEFAULT_OVERLAP, TilePlan};
use rave_native::recognise_file;
use rave_native::reference::{self, FeatureMap};

#[test]
fn tiled_outputs_match_the_whole_frame_without_visible_seams() {
    let (w, h) = (150usize, 90usize);
    let frame = picture(w as u32, h as u32);
    let x = FeatureMap::from_planar(3, h, w, frame.data.clone()).unwrap();
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
            let got = RgbImage::new((w * s) as u32, (h * s) as u32, got).unwrap();
            let want = RgbImage::new((w * s) as u32, (h * s) as u32, whole.data.clone()).unwrap();
            let (psnr, seam, rest) = compare(&got, &want, &plan, s as u32).unwrap();
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
