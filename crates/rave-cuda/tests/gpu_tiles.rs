//! The device tiling kernels against the host plan (rave_core::tiling): tiles cut on the GPU
//! equal `TilePlan::extract`, and tiles blended on the GPU equal `TilePlan::blend` (bit for
//! bit in F32, to the rounding of a half in F16), for odd frame sizes, tiles that do not
//! divide them, scales 1, 2 and 4, and tiles padded past the frame for a model of a side
//! multiple (read mirrored, blended only inside the output). Needs a GPU: ignored elsewhere, run on the H200 by
//! scripts/gpu_tests.sh.

use cudarc::driver::CudaSlice;
use half::f16;
use rave_core::gpu::GpuContext;
use rave_core::tiling::TilePlan;
use rave_core::types::PixelFormat;
use rave_cuda::tile_kernels::{BlendSums, TileKernels};

/// Values with no pattern the blend could hide an indexing error behind.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|k| ((k * 7919 + seed * 104_729) % 1009) as f32 / 1009.0)
        .collect()
}

fn bytes_of(v: &[f32], format: PixelFormat) -> Vec<u8> {
    match format {
        PixelFormat::RgbPlanarF16 => v
            .iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect(),
        _ => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn floats_of(b: &[u8], format: PixelFormat) -> Vec<f32> {
    match format {
        PixelFormat::RgbPlanarF16 => b
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn tiles_cut_and_blended_on_the_gpu_equal_the_host_plan() {
    let ctx = GpuContext::new(0).expect("a CUDA device");
    let stream = ctx.streams().inference.clone();
    let kernels = TileKernels::load(ctx.cuda()).unwrap();
    let upload = |b: &[u8]| -> CudaSlice<u8> { stream.clone_htod(b).unwrap() };
    let mut failures = Vec::new();
    for format in [PixelFormat::RgbPlanarF32, PixelFormat::RgbPlanarF16] {
        for ((w, h), tile, overlap, scale, multiple) in [
            ((53u32, 29u32), (20u32, 12u32), 5u32, 2u32, 1u32),
            ((150, 90), (64, 64), 16, 4, 1),
            ((37, 23), (16, 16), 4, 1, 1),
            ((33, 17), (64, 64), 16, 2, 1),
            ((66, 38), (128, 128), 16, 2, 8),
            ((70, 38), (40, 40), 16, 2, 4),
            ((5, 3), (8, 8), 0, 4, 8),
        ] {
            let case = format!(
                "{format:?} {w}x{h} tiles {tile:?} overlap {overlap} x{scale} multiple {multiple}"
            );
            let plan = TilePlan::padded((w, h), tile, overlap, (multiple, multiple)).unwrap();
            let frame = values(3 * (w * h) as usize, 1);
            // The frame as the GPU holds it (in F16: the halves' values on both sides).
            let frame = floats_of(&bytes_of(&frame, format), format);
            let frame_dev = upload(&bytes_of(&frame, format));
            let mut cut_ok = true;
            let mut outputs = Vec::new();
            let tiles = plan.tiles();
            for (i, t) in tiles.iter().enumerate() {
                let mut dst = stream
                    .alloc_zeros::<u8>(3 * (t.width * t.height) as usize * format.element_bytes())
                    .unwrap();
                kernels
                    .crop(&stream, &frame_dev, (w, h), format, t, &mut dst)
                    .unwrap();
                let got = floats_of(&stream.clone_dtoh(&dst).unwrap(), format);
                cut_ok &= got == plan.extract(&frame, 3, t);
                let n = 3 * (t.width * scale * t.height * scale) as usize;
                outputs.push(floats_of(&bytes_of(&values(n, i + 2), format), format));
            }
            let (ow, oh) = (w * scale, h * scale);
            let (sum_bytes, weight_bytes) = BlendSums::bytes((ow, oh));
            // Buffers full of NaNs, as a reused one may be: `clear` must zero them.
            let mut sum = upload(&vec![0xFF; sum_bytes]);
            let mut weight = upload(&vec![0xFF; weight_bytes]);
            let mut sums = BlendSums {
                sum: &mut sum,
                weight: &mut weight,
                size: (ow, oh),
            };
            sums.clear(&stream).unwrap();
            for (i, (t, out)) in tiles.iter().zip(&outputs).enumerate() {
                let (wx, wy) = plan.tile_weights(i, scale);
                let (wx, wy) = (
                    upload(&bytes_of(&wx, PixelFormat::RgbPlanarF32)),
                    upload(&bytes_of(&wy, PixelFormat::RgbPlanarF32)),
                );
                let out_dev = upload(&bytes_of(out, format));
                kernels
                    .accumulate(
                        &stream,
                        &out_dev,
                        format,
                        (t.width * scale, t.height * scale),
                        (t.x * scale, t.y * scale),
                        (&wx, &wy),
                        &mut sums,
                    )
                    .unwrap();
            }
            let mut blended = stream
                .alloc_zeros::<u8>(3 * (ow * oh) as usize * format.element_bytes())
                .unwrap();
            kernels
                .normalize(&stream, &sums, &mut blended, format)
                .unwrap();
            let got = floats_of(&stream.clone_dtoh(&blended).unwrap(), format);
            let want = plan.blend(&outputs, 3, scale).unwrap();
            let worst = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            let blend_ok = match format {
                PixelFormat::RgbPlanarF16 => got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| *a == f16::from_f32(*b).to_f32()),
                _ => got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
            };
            println!(
                "{case}: {} tiles, cut equal {cut_ok}, blend equal {blend_ok} (worst difference {worst:e})",
                tiles.len()
            );
            if !(cut_ok && blend_ok) {
                failures.push(case);
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
