//! Whole SRVGGNetCompact networks on the GPU (`CompactEngine`, the wgmma kernels) against
//! the f32 CPU reference on the same frames: the fixtures and the installed animevideov3
//! models, at several sizes including odd ones; at least 45 dB, max abs error printed. Then
//! the engine's speed at 1920x1080. Needs a Hopper GPU: ignored elsewhere, run on the H200
//! by scripts/gpu_tests.sh (RAVE_HOME pointing at the models there).

mod common;

use common::frame;

use std::time::Instant;

use cudarc::driver::CudaContext;
use rave_native::gpu::compact_engine::unsupported;
use rave_native::gpu::{CompactEngine, NativeEngine};
use rave_native::reference;
use rave_native::{Architecture, Network, recognise_file};

fn compact(net: &Network) -> &rave_native::network::CompactNet {
    match &net.architecture {
        Architecture::Compact(c) => c,
        other => panic!("not SRVGGNetCompact: {}", other.name()),
    }
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn the_gpu_network_matches_the_reference() {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let stream = ctx.default_stream();
    let mut models: Vec<(String, std::path::PathBuf)> = [
        "compact_x2.onnx",
        "compact_x2_folded.onnx",
        "compact_x2_fp16.onnx",
    ]
    .iter()
    .map(|n| (n.to_string(), common::fixture(&format!("arch/{n}"))))
    .collect();
    for name in ["realesr-animevideov3-x2", "realesr-animevideov3-x4"] {
        if let Some(p) = common::installed_model(name) {
            models.push((name.to_string(), p));
        }
    }
    let sizes = [(7, 5), (33, 17), (130, 9), (64, 64), (257, 37), (1, 1)];
    let mut tally = common::Tally::new();
    for (name, path) in &models {
        let net = recognise_file(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = compact(&net);
        if let Some(why) = unsupported(c) {
            println!("{name}: skipped ({why})");
            continue;
        }
        for &(w, h) in &sizes {
            let x = frame(w, h, (w * 31 + h) as u64);
            let want = reference::run(&net, &x);
            let mut engine =
                NativeEngine::new(&ctx, stream.clone(), &net.architecture, (h, w)).unwrap();
            let got = common::run_engine(&stream, &mut engine, &x);
            let case = format!("{name} {w}x{h} -> x{}", engine.scale());
            tally.record(&case, &got, &want.data, "");
        }
    }
    tally.finish("networks and sizes");
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn gpu_network_speed_at_1080p() {
    let ctx = CudaContext::new(0).expect("a CUDA device");
    let stream = ctx.default_stream();
    for name in ["realesr-animevideov3-x2", "realesr-animevideov3-x4"] {
        let Some(path) = common::installed_model(name) else {
            continue;
        };
        let net = recognise_file(&path).unwrap();
        let (w, h) = (1920usize, 1080usize);
        let started = Instant::now();
        let mut engine = CompactEngine::new(&ctx, stream.clone(), compact(&net), (h, w)).unwrap();
        let s = engine.scale();
        let inputs: Vec<_> = (0..3)
            .map(|i| stream.clone_htod(&frame(w, h, 77 + i).data).unwrap())
            .collect();
        let mut output = stream.alloc_zeros::<f32>(3 * w * h * s * s).unwrap();
        engine
            .run(&inputs[0].as_view(), &mut output.as_view_mut())
            .unwrap();
        stream.synchronize().unwrap();
        let first = started.elapsed();
        for round in 0..2 {
            let runs = 60;
            let t = Instant::now();
            for r in 0..runs {
                engine
                    .run(&inputs[r % 3].as_view(), &mut output.as_view_mut())
                    .unwrap();
            }
            stream.synchronize().unwrap();
            let per = t.elapsed().as_secs_f64() / runs as f64;
            println!(
                "{name} native engine {w}x{h} -> x{s}, batch 1 (round {round}): {:.3} ms per frame, {:.1} fps",
                per * 1e3,
                1.0 / per
            );
        }
        println!(
            "{name}: load + compile (or the kernel cache) + first frame {:.2} s",
            first.as_secs_f64()
        );
        // A second engine in the same process reads the kernels from the disk cache.
        let again = Instant::now();
        let engine2 = CompactEngine::new(&ctx, stream.clone(), compact(&net), (h, w)).unwrap();
        println!(
            "{name}: a second engine (kernels from the cache in {}) {:.3} s",
            rave_native::gpu::kernel_cache::default_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "nowhere: caching off".into()),
            again.elapsed().as_secs_f64()
        );
        drop(engine2);
    }
}
