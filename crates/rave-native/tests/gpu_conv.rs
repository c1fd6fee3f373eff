//! The tensor-core 3x3 convolution against the plain f32 reference (`reference::ops`), on
//! random layers and sizes (odd ones included), with PReLU, LeakyReLU and no activation;
//! then its speed at 1920x1080 with 64 channels. Needs a GPU: ignored elsewhere, run on
//! the H200 by scripts/gpu_tests.sh.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaStream};
use half::f16;
use rave_native::gpu::{Conv3x3Kernel, ConvVersion, DeviceConv};
use rave_native::network::Activation;
use rave_native::reference::FeatureMap;
use rave_native::reference::ops;

mod common;

use common::{Rng, h, layer};

fn setup() -> (Arc<CudaStream>, Conv3x3Kernel) {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let kernel = Conv3x3Kernel::load(&ctx).expect("the kernel compiles and loads");
    (ctx.default_stream(), kernel)
}

/// NCHW f32 -> NHWC half bits.
fn to_nhwc(x: &FeatureMap) -> Vec<u16> {
    let (c, n) = (x.channels, x.height * x.width);
    let mut out = vec![0u16; c * n];
    for ch in 0..c {
        for p in 0..n {
            out[p * c + ch] = f16::from_f32(x.data[ch * n + p]).to_bits();
        }
    }
    out
}

const VERSIONS: [ConvVersion; 6] = [
    ConvVersion::Direct,
    ConvVersion::Staged,
    ConvVersion::WgmmaSerial,
    ConvVersion::WgmmaUnswizzled,
    ConvVersion::Wgmma,
    ConvVersion::WgmmaSwapped,
];

/// Versions whose results are reported but not required to be right: the deliberately
/// wrong descriptor reading.
fn informational(v: ConvVersion) -> bool {
    v == ConvVersion::WgmmaSwapped
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_tensor_core_convolution_matches_the_reference() {
    let (stream, kernel) = setup();
    println!("wgmma form loaded: {}", kernel.wgmma().is_some());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut failures = Vec::new();
    let mut worst = 0.0f32;
    let mut swapped_worst = 0.0f32;
    let cases = [
        (64, 64, 33, 17),
        (64, 64, 7, 5),
        (64, 64, 1, 1),
        (64, 48, 65, 9),
        (16, 8, 130, 3),
        (32, 64, 257, 37),
        (64, 64, 64, 64),
        (96, 32, 19, 7),
        (64, 64, 300, 7),
        (64, 64, 128, 2),
        (64, 64, 129, 4),
        (64, 64, 256, 3),
        (16, 64, 131, 5),
        (16, 48, 20, 3),
        (64, 48, 140, 3),
        // More tiles than blocks (280 tiles of 2 x 128 over 132 multiprocessors): each
        // block takes two or three, so the warpgroups take several turns, an odd count too.
        (64, 64, 1000, 70),
        (16, 64, 999, 69),
    ];
    for (i, &(cin, cout, w, hgt)) in cases.iter().enumerate() {
        let conv = layer(cin, cout, &mut rng);
        let act = match i % 3 {
            0 => Activation::PRelu((0..cout).map(|_| rng.next() * 0.5).collect()),
            1 => Activation::LeakyRelu(0.2),
            _ => Activation::Identity,
        };
        let mut x = FeatureMap::zeros(cin, hgt, w);
        x.data.iter_mut().for_each(|v| *v = h(rng.next()));
        let mut want = ops::conv3x3(&x, &conv);
        ops::activate(&mut want, &act);

        let dev = DeviceConv::upload(&stream, &conv, &act).unwrap();
        let input = stream.clone_htod(&to_nhwc(&x)).unwrap();
        let name = match &act {
            Activation::PRelu(s) => format!("PReLU ({} slopes)", s.len()),
            other => format!("{other:?}"),
        };
        for version in VERSIONS {
            // The wrong reading strides past the second stage buffer's end, so it runs only
            // where every block has one tile (the first buffer).
            let tiles = w.div_ceil(128) * hgt.div_ceil(2);
            if version == ConvVersion::WgmmaSwapped && tiles > 100 {
                continue;
            }
            // Poisoned with NaN (0x7e00) so an output the kernel never wrote fails.
            let mut output = stream.clone_htod(&vec![0x7e00u16; w * hgt * cout]).unwrap();
            let ran = kernel.run_version(version, &stream, &dev, &input, &mut output, (hgt, w));
            if !kernel.supports(version, &dev) {
                assert!(ran.is_err(), "{version:?} must refuse {cin}->{cout}");
                continue;
            }
            ran.unwrap();
            let got = stream.clone_dtoh(&output).unwrap();
            let n = w * hgt;
            let mut version_worst = 0.0f32;
            let mut first_bad = None;
            for ch in 0..cout {
                for p in 0..n {
                    let g = f16::from_bits(got[p * cout + ch]).to_f32();
                    let r = want.data[ch * n + p];
                    let err = (g - r).abs() / (1.0 + r.abs());
                    let err = if err.is_nan() { f32::INFINITY } else { err };
                    if err > 2e-3 && first_bad.is_none() {
                        first_bad = Some(format!("channel {ch} pixel {p}: {g} vs {r}"));
                    }
                    version_worst = version_worst.max(err);
                }
            }
            println!(
                "{version:?}: {cin:>3} -> {cout:>3} at {w:>4}x{hgt:<4} {name}: worst relative error {version_worst:.2e}{}",
                first_bad
                    .as_deref()
                    .map(|b| format!(" (first bad: {b})"))
                    .unwrap_or_default()
            );
            if version == ConvVersion::WgmmaSwapped {
                swapped_worst = swapped_worst.max(version_worst);
            }
            if informational(version) {
                continue;
            }
            if let Some(bad) = first_bad {
                failures.push(format!(
                    "{version:?} {cin}->{cout} at {w}x{hgt} ({name}): {bad}"
                ));
            }
            worst = worst.max(version_worst);
        }
    }
    println!("worst relative error over all cases: {worst:.2e} (limit 2e-3)");
    if kernel.wgmma().is_some() {
        println!(
            "descriptor offsets exchanged (a deliberately wrong reading): worst error {swapped_worst:.2e}"
        );
        assert!(
            swapped_worst > 2e-3,
            "the test cannot tell the two descriptor readings apart"
        );
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn convolution_speed_at_1080p_64_channels() {
    let (stream, kernel) = setup();
    let mut rng = Rng(7);
    let (w, hgt, c) = (1920usize, 1080usize, 64usize);
    let conv = layer(c, c, &mut rng);
    let act = Activation::PRelu((0..c).map(|_| rng.next() * 0.5).collect());
    let dev = DeviceConv::upload(&stream, &conv, &act).unwrap();
    // Three random inputs (265 MB each, several times the L2), used in turn.
    let inputs: Vec<_> = (0..3)
        .map(|_| {
            let host: Vec<u16> = (0..w * hgt * c)
                .map(|_| f16::from_f32(rng.next()).to_bits())
                .collect();
            stream.clone_htod(&host).unwrap()
        })
        .collect();
    let mut output = stream.alloc_zeros::<u16>(w * hgt * c).unwrap();
    let flops = 2.0 * (w * hgt * c * c * 9) as f64;
    for version in VERSIONS {
        if !kernel.supports(version, &dev) || version == ConvVersion::WgmmaSwapped {
            continue;
        }
        let shape = (hgt, w);
        for round in 0..2 {
            for input in &inputs {
                kernel
                    .run_version(version, &stream, &dev, input, &mut output, shape)
                    .unwrap();
            }
            stream.synchronize().unwrap();
            let runs = 60;
            let t = Instant::now();
            for r in 0..runs {
                kernel
                    .run_version(version, &stream, &dev, &inputs[r % 3], &mut output, shape)
                    .unwrap();
            }
            stream.synchronize().unwrap();
            let per = t.elapsed().as_secs_f64() / runs as f64;
            println!(
                "{version:?} (round {round}): conv3x3 64->64 PReLU at 1920x1080: {:.3} ms per layer, {:.1} TFLOP/s; 17 such layers: {:.1} fps",
                per * 1e3,
                flops / per / 1e12,
                1.0 / (per * 17.0)
            );
        }
    }
}
