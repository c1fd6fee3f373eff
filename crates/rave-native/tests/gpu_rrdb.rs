//! RRDBNet on the GPU: the streamed convolution kernel (`StreamedKernels`) on single layers
//! against the f32 reference (input widths of 16 to 192 channels read from wider maps,
//! 3 / 32 / 64 outputs, nearest x2 sources, both residuals, odd sizes), then whole
//! networks (`RrdbEngine`: the fixtures and the installed realesrgan-x4plus models) at
//! least 45 dB against the CPU reference, then the speed at 960x540. Needs a Hopper GPU:
//! ignored elsewhere, run on the H200 by scripts/gpu_tests.sh.

mod common;

use common::{Rng, frame, h, layer};

use std::time::Instant;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use half::f16;
use rave_native::gpu::{
    NativeEngine, Residual, RrdbEngine, StreamedConv, StreamedKernels, StreamedSource,
    StreamedTarget,
};
use rave_native::network::{Activation, RrdbNet};
use rave_native::reference::{self, FeatureMap, ops};
use rave_native::{Architecture, Network, recognise_file};
use std::sync::Arc;

fn random_map(c: usize, hgt: usize, w: usize, rng: &mut Rng) -> FeatureMap {
    let mut m = FeatureMap::zeros(c, hgt, w);
    for v in &mut m.data {
        *v = h(rng.next());
    }
    m
}

/// Channels `0 .. x.channels` of an NHWC half map of `stride` channels a pixel, the rest
/// filled with `fill`.
fn to_nhwc(x: &FeatureMap, stride: usize, fill: f32) -> Vec<u16> {
    let n = x.height * x.width;
    let mut out = vec![f16::from_f32(fill).to_bits(); n * stride];
    for c in 0..x.channels {
        for p in 0..n {
            out[p * stride + c] = f16::from_f32(x.data[c * n + p]).to_bits();
        }
    }
    out
}

/// Channels `offset .. offset + c` of an NHWC half map as a planar f32 map.
fn from_nhwc(
    v: &[u16],
    stride: usize,
    offset: usize,
    c: usize,
    hgt: usize,
    w: usize,
) -> FeatureMap {
    let n = hgt * w;
    let mut m = FeatureMap::zeros(c, hgt, w);
    for ch in 0..c {
        for p in 0..n {
            m.data[ch * n + p] = f16::from_bits(v[p * stride + offset + ch]).to_f32();
        }
    }
    m
}

fn setup() -> (Arc<CudaContext>, Arc<CudaStream>, StreamedKernels) {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let sms = ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .unwrap();
    let kernels = StreamedKernels::load(&ctx, sms as u32).expect("the kernels compile and load");
    let stream = ctx.default_stream();
    (ctx, stream, kernels)
}

/// One layer case: input channels, output channels, source stride, upsampled source,
/// residual from the source, residual from the target, planar output.
struct Case {
    cin: usize,
    cout: usize,
    stride: usize,
    up: bool,
    res_source: bool,
    res_target: bool,
    planar: bool,
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn the_streamed_convolution_matches_the_reference() {
    let (_ctx, stream, mut kernels) = setup();
    let mut rng = Rng(0x5eed_1234);
    let c = |cin, cout, stride, up, res_source, res_target, planar| Case {
        cin,
        cout,
        stride,
        up,
        res_source,
        res_target,
        planar,
    };
    let cases = [
        c(16, 64, 16, false, false, false, false),
        c(64, 32, 192, false, false, false, false),
        c(96, 32, 192, false, false, false, false),
        c(160, 32, 192, false, false, false, false),
        c(192, 64, 192, false, true, false, false),
        c(192, 64, 192, false, true, true, false),
        c(64, 64, 64, false, false, true, false),
        c(64, 64, 64, true, false, false, false),
        c(64, 3, 64, false, false, false, true),
        c(48, 32, 64, true, false, false, false),
    ];
    let sizes = [(7usize, 5usize), (130, 9), (64, 17), (258, 34), (2, 2)];
    let mut failures = Vec::new();
    for (case, tensor_copies) in cases.iter().flat_map(|c| [(c, true), (c, false)]) {
        kernels.set_tensor_copies(tensor_copies);
        let staging = if tensor_copies && !case.up {
            "tensor copies"
        } else {
            "cp.async"
        };
        if case.up && tensor_copies {
            continue; // upsampled sources are always staged by cp.async
        }
        for act in [false, true] {
            if case.planar && act {
                continue;
            }
            let conv = layer(case.cin, case.cout, &mut rng);
            let activation = if act {
                Activation::LeakyRelu(0.2)
            } else {
                Activation::Identity
            };
            let dev = StreamedConv::upload(&stream, &conv, &activation).unwrap();
            for &(w, hgt) in &sizes {
                let (sw, sh) = if case.up { (w / 2, hgt / 2) } else { (w, hgt) };
                if sw == 0 || sh == 0 || (case.up && (w % 2 != 0 || hgt % 2 != 0)) {
                    continue;
                }
                let x = random_map(case.cin, sh, sw, &mut rng);
                // Channels past the layer's are NaN: reading them would show.
                let input: CudaSlice<u16> = stream
                    .clone_htod(&to_nhwc(&x, case.stride, f32::NAN))
                    .unwrap();
                let seen = if case.up {
                    ops::nearest_upsample(&x, 2)
                } else {
                    x.clone()
                };
                let mut want = ops::conv3x3(&seen, &conv);
                ops::activate(&mut want, &activation);
                let residual = Residual {
                    source: case.res_source.then_some(0.2),
                    target: case.res_target.then_some(0.2),
                };
                if case.res_source {
                    let lead = FeatureMap::from_planar(
                        case.cout,
                        hgt,
                        w,
                        seen.data[..case.cout * hgt * w].to_vec(),
                    )
                    .unwrap();
                    let mut r = lead;
                    ops::add_scaled(&mut r, &want, 0.2);
                    want = r;
                }
                let (got, label) = if case.planar {
                    let mut out = stream
                        .clone_htod(&vec![f32::NAN; case.cout * w * hgt])
                        .unwrap();
                    let mut view = out.as_view_mut();
                    kernels
                        .run(
                            &stream,
                            &dev,
                            StreamedSource::plain(&input, case.stride),
                            StreamedTarget::Planar(&mut view),
                            residual,
                            (hgt, w),
                        )
                        .unwrap();
                    let got = stream.clone_dtoh(&out).unwrap();
                    (
                        FeatureMap::from_planar(case.cout, hgt, w, got).unwrap(),
                        "planar",
                    )
                } else {
                    // The target: a wider map, the layer writing at offset 8; its old
                    // values (random) are the target residual.
                    let stride = case.cout + 16;
                    let old = random_map(stride, hgt, w, &mut rng);
                    let mut out = stream.clone_htod(&to_nhwc(&old, stride, 0.0)).unwrap();
                    if case.res_target {
                        let prev = FeatureMap::from_planar(
                            case.cout,
                            hgt,
                            w,
                            old.data[8 * hgt * w..(8 + case.cout) * hgt * w].to_vec(),
                        )
                        .unwrap();
                        let mut r = prev;
                        ops::add_scaled(&mut r, &want, 0.2);
                        want = r;
                    }
                    let source = StreamedSource::Map {
                        map: &input,
                        stride: case.stride,
                        upsampled: case.up,
                    };
                    let target = StreamedTarget::Nhwc {
                        map: &mut out,
                        stride,
                        offset: 8,
                    };
                    kernels
                        .run(&stream, &dev, source, target, residual, (hgt, w))
                        .unwrap();
                    let got = stream.clone_dtoh(&out).unwrap();
                    // The channels around the slice are untouched.
                    let before = from_nhwc(&got, stride, 0, 8, hgt, w);
                    let kept = FeatureMap::from_planar(
                        8,
                        hgt,
                        w,
                        old.data[..8 * hgt * w].iter().map(|&v| h(v)).collect(),
                    )
                    .unwrap();
                    if before != kept {
                        failures.push(format!(
                            "{}->{} {w}x{hgt} ({staging}): wrote before its slice",
                            case.cin, case.cout
                        ));
                    }
                    (from_nhwc(&got, stride, 8, case.cout, hgt, w), "nhwc")
                };
                let (psnr, max_abs) = common::psnr_and_max_abs(&got.data, &want.data);
                let rel = max_abs / want.data.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
                println!(
                    "streamed {}->{} stride {} up {} res {}/{} {label} act {act} {w}x{hgt} ({staging}): PSNR {psnr:.1} dB, max abs {max_abs:.3e}, rel {rel:.2e}",
                    case.cin, case.cout, case.stride, case.up, case.res_source, case.res_target
                );
                if rel > 2e-2 || got.data.iter().any(|v| !v.is_finite()) {
                    failures.push(format!(
                        "{}->{} {label} up {} {w}x{hgt} ({staging}): rel {rel:.2e}",
                        case.cin, case.cout, case.up
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

fn rrdb(net: &Network) -> &RrdbNet {
    match &net.architecture {
        Architecture::Rrdb(r) => r,
        other => panic!("not RRDBNet: {}", other.name()),
    }
}

fn models() -> Vec<(String, std::path::PathBuf, bool)> {
    let mut models: Vec<_> = ["rrdb_x4_nf32.onnx", "rrdb_x4_nf32_fp16.onnx"]
        .iter()
        .map(|n| (n.to_string(), common::fixture(&format!("arch/{n}")), false))
        .collect();
    for name in [
        "realesrgan-x4plus-fp16",
        "realesrgan-x4plus",
        "realesrgan-x4plus-anime",
    ] {
        if let Some(p) = common::installed_model(name) {
            models.push((name.to_string(), p, true));
        }
    }
    models
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn the_gpu_rrdb_matches_the_reference() {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let stream = ctx.default_stream();
    let mut tally = common::Tally::new();
    for (name, path, heavy) in models() {
        let net = recognise_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        println!("{name}: {net}");
        let r = rrdb(&net);
        if let Some(why) = rave_native::gpu::rrdb_engine::unsupported(r) {
            tally.failures.push(format!("{name}: refused ({why})"));
            continue;
        }
        let sizes: &[(usize, usize)] = if heavy {
            &[(7, 5), (33, 17), (130, 9)]
        } else {
            &[(7, 5), (33, 17), (130, 9), (64, 64), (257, 37), (1, 1)]
        };
        for &(w, hgt) in sizes {
            let x = frame(w, hgt, (w * 31 + hgt) as u64);
            let t = Instant::now();
            let want = reference::run(&net, &x);
            let cpu = t.elapsed();
            let mut engine =
                NativeEngine::new(&ctx, stream.clone(), &net.architecture, (hgt, w)).unwrap();
            let got = common::run_engine(&stream, &mut engine, &x);
            let case = format!("{name} {w}x{hgt} -> x{}", engine.scale());
            let extra = format!(" (reference {:.1} s)", cpu.as_secs_f64());
            tally.record(&case, &got, &want.data, &extra);
        }
    }
    tally.finish("RRDB networks and sizes");
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn gpu_rrdb_speed_at_960x540() {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let stream = ctx.default_stream();
    for (name, path, heavy) in models() {
        if !heavy {
            continue;
        }
        let net = recognise_file(&path).unwrap();
        let (w, hgt) = (960usize, 540usize);
        let started = Instant::now();
        let mut engine = RrdbEngine::new(&ctx, stream.clone(), rrdb(&net), (hgt, w)).unwrap();
        let s = engine.scale();
        let input = stream.clone_htod(&frame(w, hgt, 5).data).unwrap();
        let mut output = stream.alloc_zeros::<f32>(3 * w * hgt * s * s).unwrap();
        engine
            .run(&input.as_view(), &mut output.as_view_mut())
            .unwrap();
        stream.synchronize().unwrap();
        let first = started.elapsed();
        // Alternating the two ways of staging sources of the output's size.
        for round in 0..4 {
            let tensor_copies = round % 2 == 0;
            engine.set_tensor_copies(tensor_copies);
            let staging = if tensor_copies {
                "tensor copies"
            } else {
                "cp.async"
            };
            engine
                .run(&input.as_view(), &mut output.as_view_mut())
                .unwrap();
            stream.synchronize().unwrap();
            let runs = 10;
            let t = Instant::now();
            for _ in 0..runs {
                engine
                    .run(&input.as_view(), &mut output.as_view_mut())
                    .unwrap();
            }
            stream.synchronize().unwrap();
            let per = t.elapsed().as_secs_f64() / runs as f64;
            println!(
                "{name} native engine {w}x{hgt} -> x{s}, batch 1 (round {round}, {staging}): {:.2} ms per frame, {:.2} fps",
                per * 1e3,
                1.0 / per
            );
        }
        println!(
            "{name}: load + compile (or the kernel cache) + first frame {:.2} s",
            first.as_secs_f64()
        );
    }
    layer_speeds();
}

/// Each kind of layer of realesrgan-x4plus at its size, timed alone: where the time goes.
fn layer_speeds() {
    let (_ctx, stream, mut kernels) = setup();
    for tensor_copies in [true, false] {
        kernels.set_tensor_copies(tensor_copies);
        let staging = if tensor_copies {
            "tensor copies (cp.async where upsampled)"
        } else {
            "cp.async"
        };
        println!("layers staged by {staging}:");
        layer_speeds_of(&stream, &kernels);
    }
}

fn layer_speeds_of(stream: &Arc<CudaStream>, kernels: &StreamedKernels) {
    let mut rng = Rng(99);
    // (what, cin, cout, source stride, upsampled, output size, count per frame)
    let kinds = [
        ("dense conv 64->32", 64, 32, 192, false, (540, 960), 69),
        ("dense conv 96->32", 96, 32, 192, false, (540, 960), 69),
        ("dense conv 128->32", 128, 32, 192, false, (540, 960), 69),
        ("dense conv 160->32", 160, 32, 192, false, (540, 960), 69),
        ("dense conv 192->64", 192, 64, 192, false, (540, 960), 0),
        (
            "dense conv 192->64 + both residuals",
            192,
            64,
            192,
            false,
            (540, 960),
            69,
        ),
        (
            "upsample conv 64->64 at 1920x1080",
            64,
            64,
            64,
            true,
            (1080, 1920),
            1,
        ),
        (
            "upsample conv 64->64 at 3840x2160",
            64,
            64,
            64,
            true,
            (2160, 3840),
            1,
        ),
        (
            "conv_hr 64->64 at 3840x2160",
            64,
            64,
            64,
            false,
            (2160, 3840),
            1,
        ),
        (
            "conv_last 64->3 at 3840x2160",
            64,
            3,
            64,
            false,
            (2160, 3840),
            1,
        ),
    ];
    let mut total = 0.0;
    for (what, cin, cout, stride, up, (hgt, w), count) in kinds {
        let conv = layer(cin, cout, &mut rng);
        let act = if cout == 3 {
            Activation::Identity
        } else {
            Activation::LeakyRelu(0.2)
        };
        let dev = StreamedConv::upload(stream, &conv, &act).unwrap();
        let src_pixels = if up { hgt * w / 4 } else { hgt * w };
        let input = stream.alloc_zeros::<u16>(src_pixels * stride).unwrap();
        let out_stride = if cout == 32 { 192 } else { 64 };
        let mut out = stream.alloc_zeros::<u16>(hgt * w * out_stride).unwrap();
        let mut planar = stream.alloc_zeros::<f32>(3 * hgt * w).unwrap();
        let once = |planar_out: &mut CudaSlice<f32>, out: &mut CudaSlice<u16>| {
            let source = StreamedSource::Map {
                map: &input,
                stride,
                upsampled: up,
            };
            if cout == 3 {
                let mut v = planar_out.as_view_mut();
                kernels
                    .run(
                        stream,
                        &dev,
                        source,
                        StreamedTarget::Planar(&mut v),
                        Residual::default(),
                        (hgt, w),
                    )
                    .unwrap();
            } else {
                let target = StreamedTarget::Nhwc {
                    map: out,
                    stride: out_stride,
                    offset: if cout == 32 { 160 } else { 0 },
                };
                let residual = match what.contains("residuals") {
                    true => Residual {
                        source: Some(0.2),
                        target: Some(0.2),
                    },
                    false => Residual::default(),
                };
                kernels
                    .run(stream, &dev, source, target, residual, (hgt, w))
                    .unwrap();
            }
        };
        once(&mut planar, &mut out);
        stream.synchronize().unwrap();
        let runs = 20;
        let t = Instant::now();
        for _ in 0..runs {
            once(&mut planar, &mut out);
        }
        stream.synchronize().unwrap();
        let per = t.elapsed().as_secs_f64() / runs as f64;
        let flops = 2.0 * 9.0 * (cin * cout) as f64 * (hgt * w) as f64;
        total += per * count as f64;
        println!(
            "layer {what}: {:.3} ms ({:.0} TFLOP/s of the layer's own work), x{count} per frame = {:.2} ms",
            per * 1e3,
            flops / per / 1e12,
            per * count as f64 * 1e3
        );
    }
    println!("layers summed: {:.1} ms per frame", total * 1e3);
}

/// One launch each of the two heaviest kinds of RRDBNet layer at 960x540 (a dense conv of
/// 64 -> 32 channels, the stacked form, and an RRDB's closing 192 -> 64 conv with both
/// residuals), nothing else: the target for `ncu -k regex:streamed`.
#[test]
#[ignore = "needs a Hopper GPU"]
fn streamed_layers_for_a_profiler() {
    let (_ctx, stream, kernels) = setup();
    let mut rng = Rng(7);
    let (hgt, w) = (540, 960);
    for (cin, cout, residual) in [(64, 32, false), (192, 64, true)] {
        let conv = layer(cin, cout, &mut rng);
        let dev = StreamedConv::upload(&stream, &conv, &Activation::LeakyRelu(0.2)).unwrap();
        let input = stream.alloc_zeros::<u16>(hgt * w * 192).unwrap();
        let mut out = stream.alloc_zeros::<u16>(hgt * w * 192).unwrap();
        let residual = match residual {
            true => Residual {
                source: Some(0.2),
                target: Some(0.2),
            },
            false => Residual::default(),
        };
        let target = StreamedTarget::Nhwc {
            map: &mut out,
            stride: 192,
            offset: if cout == 32 { 64 } else { 0 },
        };
        kernels
            .run(
                &stream,
                &dev,
                StreamedSource::plain(&input, 192),
                target,
                residual,
                (hgt, w),
            )
            .unwrap();
        stream.synchronize().unwrap();
    }
}
