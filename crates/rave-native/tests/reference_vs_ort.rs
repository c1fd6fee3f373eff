//! The CPU reference against ONNX Runtime's CPU backend on the same inputs: the tiny fixture
//! networks of tools/make_arch_fixtures.py at several sizes (odd ones included), and the
//! installed models at small sizes where they are installed. Each must reach 45 dB PSNR
//! (peak 1) and stay within 1e-4 of ORT everywhere; the max abs error is printed.

mod common;

use std::path::Path;

use rave_core::backend::Upscaler;
use rave_core::frame::RgbImage;
use rave_native::recognise_file;
use rave_native::reference::{self, FeatureMap};
use rave_tensorrt::{CpuBackend, ModelOptions};

/// A deterministic image with values in [0, 1] (a xorshift sequence).
fn image(w: usize, h: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..3 * w * h)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// Compare the reference with ORT on `path` at each `(w, h)`; returns the worst max abs error.
fn compare(path: &Path, sizes: &[(usize, usize)], max_abs_limit: f32) -> f32 {
    let net = recognise_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ort = CpuBackend::new(common::runtime(), path, &ModelOptions { threads: 2 })
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut worst = 0.0f32;
    for (k, &(w, h)) in sizes.iter().enumerate() {
        let data = image(w, h, k as u64 + 1);
        let expected = ort
            .upscale(&[RgbImage::new(w as u32, h as u32, data.clone()).unwrap()])
            .unwrap()
            .remove(0);
        let got = reference::run(&net, &FeatureMap::from_planar(3, h, w, data).unwrap());
        let s = net.scale as usize;
        assert_eq!(
            (got.width, got.height),
            (w * s, h * s),
            "{}",
            path.display()
        );
        assert_eq!(got.data.len(), expected.data.len());
        let (mut max_abs, mut sq) = (0.0f32, 0.0f64);
        for (a, b) in got.data.iter().zip(&expected.data) {
            let d = (a - b).abs();
            max_abs = max_abs.max(d);
            sq += f64::from(d) * f64::from(d);
        }
        let mse = sq / got.data.len() as f64;
        let psnr = if mse == 0.0 {
            f64::INFINITY
        } else {
            -10.0 * mse.log10()
        };
        println!(
            "{} {w}x{h}: PSNR {psnr:.1} dB, max abs error {max_abs:.3e}",
            path.file_name().unwrap().to_string_lossy()
        );
        assert!(
            psnr >= 45.0,
            "{} {w}x{h}: PSNR {psnr:.1} dB",
            path.display()
        );
        assert!(
            max_abs <= max_abs_limit,
            "{} {w}x{h}: max abs error {max_abs:e}",
            path.display()
        );
        worst = worst.max(max_abs);
    }
    worst
}

const SIZES: &[(usize, usize)] = &[(16, 16), (7, 5), (13, 9), (1, 1), (2, 3)];

#[test]
fn compact_fixtures_match_onnx_runtime() {
    for name in [
        "compact_x2",
        "compact_x3_cubic",
        "compact_x2_folded",
        "compact_torch_shared",
    ] {
        compare(&common::fixture(&format!("arch/{name}.onnx")), SIZES, 1e-4);
    }
}

#[test]
fn rrdb_fixtures_match_onnx_runtime() {
    for name in ["rrdb_x4", "rrdb_x2", "rrdb_x4_nf32"] {
        compare(&common::fixture(&format!("arch/{name}.onnx")), SIZES, 1e-4);
    }
}

#[test]
fn installed_compact_models_match_onnx_runtime() {
    for name in [
        "realesr-animevideov3-x2",
        "realesr-animevideov3-x3",
        "realesr-animevideov3-x4",
    ] {
        if let Some(path) = common::installed_model(name) {
            compare(&path, &[(12, 9), (5, 7)], 1e-4);
        }
    }
}

#[test]
fn installed_rrdb_models_match_onnx_runtime() {
    for name in ["realesrgan-x4plus-anime", "realesrgan-x4plus"] {
        if let Some(path) = common::installed_model(name) {
            compare(&path, &[(7, 5)], 1e-4);
        }
    }
}
