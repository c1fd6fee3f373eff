//! Tiling through the real CPU path: `Tiled` over ONNX Runtime's CPU backend against the same
//! backend on the whole frame, with the SRVGGNetCompact and RRDBNet fixtures on small odd-size
//! picture-like frames and tiles that do not divide them. At the default overlap the tiled
//! output must be within 45 dB of the whole frame's and its seam rows and columns no worse
//! than the rest; tiles batched (4 a run) must give what tiles one a run give.

mod common;

use common::cpu_backend;
use rave_core::backend::Upscaler;
use rave_core::frame::RgbImage;
use rave_core::tiling::seam_check::{compare, picture};
use rave_core::tiling::{DEFAULT_OVERLAP, HostTiles, TilePlan, Tiled};

#[test]
fn tiled_on_onnx_runtime_matches_the_whole_frame_without_visible_seams() {
    for name in ["arch/compact_x2.onnx", "arch/rrdb_x4_nf32.onnx"] {
        let whole_backend = cpu_backend(name, 1);
        let s = whole_backend.model().unwrap().scale;
        for (w, h) in [(101u32, 67u32), (77, 45)] {
            let frame = picture(w, h);
            let whole = whole_backend
                .upscale(std::slice::from_ref(&frame))
                .unwrap()
                .remove(0);
            for (tile, overlap) in [
                ((48, 40), DEFAULT_OVERLAP),
                ((64, 64), DEFAULT_OVERLAP),
                ((37, 33), 12),
                ((40, 36), 8),
            ] {
                let plan = TilePlan::new((w, h), tile, overlap).unwrap();
                assert!(!plan.is_whole(), "{w}x{h} {tile:?}: more than one tile");
                let tiled = Tiled::new(cpu_backend(name, 1), HostTiles, tile, overlap).unwrap();
                let got = tiled
                    .upscale(std::slice::from_ref(&frame))
                    .unwrap()
                    .remove(0);
                assert_eq!((got.width, got.height), (w * s, h * s));
                let (psnr, seam, rest) = compare(&got, &whole, &plan, s).unwrap();
                println!(
                    "{name} {w}x{h}, tiles {}x{} overlap {overlap} ({} tiles): {psnr:.1} dB, worst on seams {seam:.2e}, elsewhere {rest:.2e}",
                    tile.0,
                    tile.1,
                    plan.tiles().len()
                );
                if overlap == DEFAULT_OVERLAP {
                    assert!(psnr >= 45.0, "{name} {w}x{h} {tile:?}: {psnr:.1} dB");
                    assert!(
                        seam <= rest,
                        "{name} {w}x{h} {tile:?}: seams {seam:.2e} worse than the rest {rest:.2e}"
                    );
                } else {
                    assert!(
                        psnr >= 40.0,
                        "{name} {w}x{h} {tile:?} overlap {overlap}: {psnr:.1} dB"
                    );
                }
            }
        }
    }
}

#[test]
fn tiles_batched_through_onnx_runtime_equal_tiles_one_a_run() {
    let frames = [picture(77, 45), picture(77, 45)];
    let one = Tiled::new(
        cpu_backend("arch/compact_x2.onnx", 1),
        HostTiles,
        (32, 32),
        8,
    )
    .unwrap();
    let four = Tiled::new(
        cpu_backend("arch/compact_x2.onnx", 4),
        HostTiles,
        (32, 32),
        8,
    )
    .unwrap();
    assert_eq!(four.batching().max_batch, 4);
    let a: Vec<RgbImage> = frames
        .iter()
        .flat_map(|f| one.upscale(std::slice::from_ref(f)).unwrap())
        .collect();
    let b = four.upscale(&frames).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        let worst = x
            .data
            .iter()
            .zip(&y.data)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 1e-5, "{worst}");
    }
}
