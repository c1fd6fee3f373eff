//! GPU backend check and benchmark for the H200 (run by scripts/gpu_tests.sh):
//! - the provider policies (`tensorrt` must fail clearly where TensorRT is missing, `auto`
//!   must fall back to CUDA and say why);
//! - accuracy: the CUDA backend against the CPU backend on the same frames (PSNR; >= 60 dB
//!   for the FP32 model, >= 45 dB for the FP16 model against the FP32 reference);
//! - throughput at 1920x1080 for each model, batch size and CUDA-graph setting, printed as a
//!   table, with the backend's own report (binding mode, ring, audit, host allocations).
//!
//! Usage: ORT_DYLIB_PATH=/path/libonnxruntime.so gpu_backend_check FP32.onnx [FP16.onnx] [FRAMES] [BATCHES] [MORE.onnx,...]
//!   BATCHES: comma-separated batch sizes (default 1,2,4,8).
//!   MORE: further models timed at batch 1 only (e.g. the unfolded ncnn structure).
//! With RAVE_VARIANTS=1 the CUDA provider's NHWC and conv-bias-fusion switches are compared
//! too, and MORE models are timed.
//! With RAVE_PROFILE_REGION=1 only the FP16 batch-1 case runs, with the CUDA profiler
//! started around 5 frames (for `ncu --profile-from-start off`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rave_core::backend::{UpscaleBackend, Upscaler};
use rave_core::batch::Batching;
use rave_core::block_on::block_on;
use rave_core::frame::RgbImage;
use rave_core::gpu::{GpuBuffer, GpuContext};
use rave_core::types::{GpuTexture, PixelFormat};
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::gpu_backend::{GpuBackendConfig, TensorRtBackend};
use rave_tensorrt::gpu_inference::GpuInference;
use rave_tensorrt::provider_paths::{self, ProviderCandidate, SearchInputs};
use rave_tensorrt::{CpuBackend, LoadedModel, ModelOptions, OrtRuntime, RuntimeCandidate};

#[cfg(feature = "debug-alloc")]
#[global_allocator]
static ALLOC: rave_core::debug_alloc::CountingAllocator = rave_core::debug_alloc::CountingAllocator;

/// A progress marker on stderr, so a hang shows where it happened.
fn step(what: &str) {
    eprintln!("[gpu_backend_check] {what}");
}

fn picture(w: u32, h: u32, seed: u32) -> RgbImage {
    let n = (w * h) as usize;
    let mut data = vec![0f32; 3 * n];
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let smooth =
                    0.5 + 0.4 * (((x + 3 * c) as f32 * 0.07).sin() * ((y + c) as f32 * 0.05).cos());
                let noise = (s % 1000) as f32 / 1000.0 * 0.1 - 0.05;
                data[c as usize * n + (y * w + x) as usize] = (smooth + noise).clamp(0.0, 1.0);
            }
        }
    }
    RgbImage::new(w, h, data).unwrap()
}

fn upload(ctx: &GpuContext, img: &RgbImage, format: PixelFormat) -> GpuTexture {
    let bytes: Vec<u8> = match format {
        PixelFormat::RgbPlanarF16 => img
            .data
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect(),
        _ => img.data.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let mut slice = ctx.alloc(bytes.len()).expect("alloc");
    ctx.streams()
        .preprocess
        .memcpy_htod(&bytes, &mut slice)
        .expect("upload");
    GpuTexture {
        data: Arc::new(GpuBuffer::unpooled(slice)),
        width: img.width,
        height: img.height,
        pitch: img.width as usize * format.element_bytes(),
        format,
    }
}

fn download(ctx: &GpuContext, t: &GpuTexture) -> Vec<f32> {
    let bytes = ctx
        .streams()
        .encode
        .clone_dtoh(&**t.data)
        .expect("download");
    let n = 3 * (t.width * t.height) as usize;
    match t.format {
        PixelFormat::RgbPlanarF16 => bytes
            .chunks(2)
            .take(n)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => bytes
            .chunks(4)
            .take(n)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
    }
}

struct Setup<'a> {
    ctx: Arc<GpuContext>,
    runtime: &'static OrtRuntime,
    candidates: &'a [ProviderCandidate],
}

impl Setup<'_> {
    fn config(
        &self,
        model: &Path,
        policy: EpPolicy,
        batch: usize,
        graph: bool,
    ) -> GpuBackendConfig {
        let mut c = GpuBackendConfig::new(model.to_path_buf(), self.candidates.to_vec());
        c.policy = policy;
        c.engine_cache = Some(std::env::temp_dir().join("rave-trt-cache"));
        c.frame_size = Some((1920, 1080));
        c.batch = Batching {
            max_batch: batch,
            ..Batching::default()
        };
        c.cuda_graph = graph;
        c.ring_size = c.min_ring_slots();
        c
    }

    fn backend(&self, config: GpuBackendConfig) -> TensorRtBackend {
        self.try_backend(config).expect("CUDA backend")
    }

    fn try_backend(&self, config: GpuBackendConfig) -> rave_core::Result<TensorRtBackend> {
        let b = TensorRtBackend::new(config, self.ctx.clone(), self.runtime);
        block_on(b.initialize())?;
        Ok(b)
    }
}

/// Frames per second over `frames` frames in batches of `batch`, after warm-up.
fn throughput(b: &TensorRtBackend, input: &GpuTexture, batch: usize, frames: usize) -> f64 {
    let inputs = vec![input.clone(); batch];
    // The GPU times are read after each call, as the pipeline's inference stage does (the
    // timer holds a bounded number of pending runs without allocating).
    let run = |n: usize| {
        for _ in 0..n.div_ceil(batch) {
            drop(b.upscale(&inputs).expect("frames"));
            drop(b.finished_gpu_times(false).expect("GPU times"));
        }
    };
    // A run may return before the GPU is done (queued on RAVE's stream): the clock stops
    // when the device is idle.
    let idle = || {
        input
            .data
            .stream()
            .context()
            .synchronize()
            .expect("device sync")
    };
    run(3 * batch);
    idle();
    let t = Instant::now();
    run(frames);
    idle();
    frames.div_ceil(batch) as f64 * batch as f64 / t.elapsed().as_secs_f64()
}

fn name(p: &Path) -> String {
    p.file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fp32 = PathBuf::from(
        args.first()
            .expect("usage: gpu_backend_check FP32.onnx [FP16.onnx] [FRAMES] [BATCHES]"),
    );
    let fp16 = args.get(1).map(PathBuf::from).filter(|p| p.exists());
    let frames: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(100);
    let batches: Vec<usize> = args
        .get(3)
        .map_or("1,2,4,8", String::as_str)
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    let lib = PathBuf::from(std::env::var_os("ORT_DYLIB_PATH").expect("ORT_DYLIB_PATH"));
    let runtime =
        OrtRuntime::load(&[RuntimeCandidate::new(&lib, "ORT_DYLIB_PATH")]).expect("runtime");
    let candidates = provider_paths::candidates(&SearchInputs {
        runtime_dir: lib.parent().map(|p| p.to_path_buf()),
        ..Default::default()
    });
    let setup = Setup {
        ctx: GpuContext::new(0).expect("GPU"),
        runtime,
        candidates: &candidates,
    };
    let ctx = setup.ctx.clone();
    let extra: Vec<PathBuf> = args
        .get(4)
        .map(|v| v.split(',').map(PathBuf::from).collect())
        .unwrap_or_default();
    let switch = |name: &str, default: bool| std::env::var(name).map_or(default, |v| v == "1");
    let profile = std::env::var_os("RAVE_PROFILE_REGION").is_some();
    if profile {
        let model = fp16.clone().unwrap_or_else(|| fp32.clone());
        let mut c = setup.config(&model, EpPolicy::Cuda, 1, false);
        c.cuda_prefer_nhwc = switch("RAVE_NHWC", true);
        c.cuda_fuse_conv_bias = switch("RAVE_FUSE_CONV_BIAS", false);
        let b = setup.backend(c);
        let format = b.model().unwrap().tensor_format;
        let input = upload(&ctx, &picture(1920, 1080, 7), format);
        throughput(&b, &input, 1, 5);
        // SAFETY: plain driver calls bracketing the profiled region; no memory involved.
        unsafe {
            cudarc::driver::sys::cuProfilerStart();
        }
        throughput(&b, &input, 1, 5);
        // SAFETY: as above.
        unsafe {
            cudarc::driver::sys::cuProfilerStop();
        }
        return;
    }

    for policy in [EpPolicy::TensorRt, EpPolicy::Auto] {
        let b = TensorRtBackend::new(setup.config(&fp32, policy, 1, false), ctx.clone(), runtime);
        match block_on(b.initialize()) {
            Ok(()) => println!(
                "policy {policy:?}: runs on {} (fallback reason: {})",
                b.selected_provider().map_or("?", |k| k.label()),
                b.fallback_reason().unwrap_or("none")
            ),
            Err(e) => println!("policy {policy:?}: error: {e}"),
        }
        block_on(b.shutdown()).ok();
    }

    // Accuracy against the CPU backend running the FP32 model.
    let cpu = CpuBackend::new(runtime, &fp32, &ModelOptions { threads: 16 }).expect("CPU backend");
    let mut failed = false;
    let models: Vec<(PathBuf, f64)> = std::iter::once((fp32.clone(), 60.0))
        .chain(fp16.iter().map(|p| (p.clone(), 45.0)))
        .collect();
    for (model, bar) in &models {
        for (batch, graph) in [(1usize, false), (4, false), (1, true)] {
            let mut c = setup.config(model, EpPolicy::Cuda, batch, graph);
            c.frame_size = None; // small frames here: no warm-up at 1080p
            let b = setup.backend(c);
            let format = b.model().unwrap().tensor_format;
            let mut worst = f64::INFINITY;
            for (i, (w, h)) in [(96u32, 64u32), (127, 71), (320, 180)]
                .into_iter()
                .enumerate()
            {
                if graph && i > 0 {
                    break; // graphs are captured for one size
                }
                let imgs: Vec<RgbImage> = (0..batch)
                    .map(|k| picture(w, h, (i * 10 + k) as u32 + 1))
                    .collect();
                let inputs: Vec<GpuTexture> =
                    imgs.iter().map(|m| upload(&ctx, m, format)).collect();
                let outs = b.upscale(&inputs).expect("gpu");
                for (img, out) in imgs.iter().zip(&outs) {
                    let reference = cpu
                        .upscale(std::slice::from_ref(img))
                        .expect("cpu")
                        .remove(0);
                    let got = download(&ctx, out);
                    worst = worst.min(rave_cuda::quality::psnr(&got, &reference.data, 1.0));
                }
            }
            let ok = worst >= *bar;
            failed |= !ok;
            println!(
                "accuracy {} batch {batch} graph {graph}: worst PSNR vs CPU FP32 {worst:.1} dB (bar {bar} dB) {}",
                name(model),
                if ok { "ok" } else { "FAIL" }
            );
            block_on(b.shutdown()).ok();
        }
    }

    // Throughput table.
    println!("| model | tensors | batch | CUDA graph | fps | binding | audit | host allocs |");
    println!("|---|---|---|---|---|---|---|---|");
    for (model, _) in &models {
        let format = LoadedModel::inspect(runtime, model).unwrap().tensor_format;
        let input = upload(&ctx, &picture(1920, 1080, 7), format);
        for graph in [false, true] {
            for &batch in &batches {
                step(&format!("{} batch {batch} graph {graph}", name(model)));
                let b = setup.backend(setup.config(model, EpPolicy::Cuda, batch, graph));
                let fps = throughput(&b, &input, batch, frames);
                let r = b.report();
                println!(
                    "| {} | {:?} | {batch} | {} | {fps:.1} | {} | {} | {} |",
                    name(model),
                    format,
                    if graph { "on" } else { "off" },
                    r.binding,
                    r.audit_mismatches,
                    r.host_allocations
                        .map_or("not counted".into(), |n| n.to_string()),
                );
                block_on(b.shutdown()).ok();
                let r = b.report();
                eprintln!("report: {}", serde_json::to_string(&r).unwrap_or_default());
            }
        }
    }
    // The CUDA provider's layout and fusion switches, batch 1 (RAVE_VARIANTS=1).
    let variants = switch("RAVE_VARIANTS", false);
    if variants {
        println!("| model | prefer_nhwc | fuse_conv_bias | fps (batch 1) |");
        println!("|---|---|---|---|");
    }
    for (model, _) in models.iter().filter(|_| variants) {
        let format = LoadedModel::inspect(runtime, model).unwrap().tensor_format;
        let input = upload(&ctx, &picture(1920, 1080, 7), format);
        for nhwc in [false, true] {
            for fuse in [false, true] {
                let mut c = setup.config(model, EpPolicy::Cuda, 1, false);
                c.cuda_prefer_nhwc = nhwc;
                c.cuda_fuse_conv_bias = fuse;
                let fps = match setup.try_backend(c) {
                    Ok(b) => {
                        let fps = throughput(&b, &input, 1, frames);
                        block_on(b.shutdown()).ok();
                        format!("{fps:.1}")
                    }
                    Err(e) => format!("error: {e}"),
                };
                println!("| {} | {nhwc} | {fuse} | {fps} |", name(model));
            }
        }
    }
    for model in extra.iter().filter(|_| variants) {
        let format = LoadedModel::inspect(runtime, model).unwrap().tensor_format;
        let input = upload(&ctx, &picture(1920, 1080, 7), format);
        let b = setup.backend(setup.config(model, EpPolicy::Cuda, 1, false));
        let fps = throughput(&b, &input, 1, frames);
        println!("| {} | true | false | {fps:.1} |", name(model));
        block_on(b.shutdown()).ok();
    }
    println!("VRAM (current, peak) bytes: {:?}", ctx.vram_usage());
    if failed {
        eprintln!("FAIL: accuracy below the bar");
        std::process::exit(1);
    }
}
