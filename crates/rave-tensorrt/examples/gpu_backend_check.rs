//! GPU backend check for the H200 (run by scripts/gpu_tests.sh): the provider policies
//! (`tensorrt` must fail clearly where TensorRT is missing, `auto` must fall back to CUDA and
//! say why), the CUDA backend's output against the CPU backend on the same frames (PSNR,
//! FP32), and its throughput at 1920x1080 with IO binding on device memory.
//!
//! Usage: ORT_DYLIB_PATH=/path/libonnxruntime.so gpu_backend_check MODEL.onnx [FRAMES] [CPU_MODEL.onnx]
//!
//! With CPU_MODEL (e.g. the fp32 original of an fp16 MODEL), the CPU backend runs that one as
//! the reference and the bar is 45 dB (FP16) instead of 60 dB (FP32).

use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use rave_core::backend::{HostUpscaleBackend, UpscaleBackend};
use rave_core::frame::RgbImage;
use rave_core::gpu::{GpuBuffer, GpuContext};
use rave_core::types::{GpuTexture, PixelFormat};
use rave_tensorrt::ep_policy::EpPolicy;
use rave_tensorrt::gpu_backend::{GpuBackendConfig, TensorRtBackend};
use rave_tensorrt::provider_paths::{self, SearchInputs};
use rave_tensorrt::{CpuBackend, ModelOptions, OrtRuntime, RuntimeCandidate};

/// Drive a future that never really waits (the backend's calls are synchronous inside).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

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

fn upload(ctx: &GpuContext, img: &RgbImage) -> GpuTexture {
    let bytes: Vec<u8> = img.data.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut slice = ctx.alloc(bytes.len()).expect("alloc");
    ctx.streams()
        .preprocess
        .memcpy_htod(&bytes, &mut slice)
        .expect("upload");
    GpuTexture {
        data: Arc::new(GpuBuffer::unpooled(slice)),
        width: img.width,
        height: img.height,
        pitch: img.width as usize * 4,
        format: PixelFormat::RgbPlanarF32,
    }
}

fn download(ctx: &GpuContext, t: &GpuTexture) -> Vec<f32> {
    let bytes = ctx
        .streams()
        .encode
        .clone_dtoh(&**t.data)
        .expect("download");
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Seconds for `frames` back-to-back frames after 3 warm-up frames.
fn time_frames(backend: &TensorRtBackend, input: &GpuTexture, frames: usize) -> f64 {
    for _ in 0..3 {
        drop(block_on(backend.process(input.clone())).expect("warm-up"));
    }
    let t = Instant::now();
    for _ in 0..frames {
        drop(block_on(backend.process(input.clone())).expect("frame"));
    }
    t.elapsed().as_secs_f64()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let model = PathBuf::from(
        args.next()
            .expect("usage: gpu_backend_check MODEL.onnx [FRAMES]"),
    );
    let frames: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(50);
    let cpu_model = args.next().map(PathBuf::from);
    let (bar_db, precision) = if cpu_model.is_some() {
        (45.0, "FP16 vs FP32 reference")
    } else {
        (60.0, "FP32")
    };
    let lib = PathBuf::from(std::env::var_os("ORT_DYLIB_PATH").expect("ORT_DYLIB_PATH"));
    let runtime =
        OrtRuntime::load(&[RuntimeCandidate::new(&lib, "ORT_DYLIB_PATH")]).expect("runtime");
    let ctx = GpuContext::new(0).expect("GPU");
    let candidates = provider_paths::candidates(&SearchInputs {
        runtime_dir: lib.parent().map(|p| p.to_path_buf()),
        ..Default::default()
    });
    let config = |policy| GpuBackendConfig {
        model: model.clone(),
        policy,
        device_id: 0,
        ring_size: 6,
        downstream_capacity: 4,
        provider_candidates: candidates.clone(),
        engine_cache: Some(std::env::temp_dir().join("rave-trt-cache")),
        trt_fp16: false,
        cuda_prefer_nhwc: false,
    };
    for policy in [EpPolicy::TensorRt, EpPolicy::Auto] {
        let b = TensorRtBackend::new(config(policy), ctx.clone(), runtime);
        match block_on(b.initialize()) {
            Ok(()) => println!(
                "policy {policy:?}: runs on {} (fallback reason: {})",
                b.selected_provider().map_or("?", |k| k.label()),
                b.fallback_reason().unwrap_or("none")
            ),
            Err(e) => println!("policy {policy:?}: error: {e}"),
        }
        step("shutting down the policy backend");
        block_on(b.shutdown()).ok();
        step("dropping it");
        drop(b);
    }

    let gpu = TensorRtBackend::new(config(EpPolicy::Cuda), ctx.clone(), runtime);
    block_on(gpu.initialize()).expect("CUDA backend");
    let reference_model = cpu_model.clone().unwrap_or_else(|| model.clone());
    let mut cpu = CpuBackend::new(runtime, &reference_model, &ModelOptions { threads: 16 })
        .expect("CPU backend");
    let mut worst_db = f64::INFINITY;
    for (i, (w, h)) in [(96u32, 64u32), (127, 71), (320, 180)]
        .into_iter()
        .enumerate()
    {
        let img = picture(w, h, i as u32 + 1);
        step(&format!("{w}x{h}: CPU"));
        let reference = cpu.process(&img).expect("cpu");
        step("upload");
        let input = upload(&ctx, &img);
        step("GPU process");
        let out = block_on(gpu.process(input)).expect("gpu");
        step("download");
        let got = download(&ctx, &out);
        let max_err = got
            .iter()
            .zip(&reference.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let db = rave_cuda::quality::psnr(&got, &reference.data, 1.0);
        worst_db = worst_db.min(db);
        println!(
            "accuracy {w}x{h}: CUDA EP vs CPU EP max_abs_err {max_err:.3e} PSNR {db:.1} dB ({precision})"
        );
    }

    let img = picture(1920, 1080, 7);
    let input = upload(&ctx, &img);
    let secs = time_frames(&gpu, &input, frames);
    let m = gpu.inference_metrics();
    println!(
        "throughput 1920x1080 {} batch 1, CUDA EP, IO binding: {:.1} fps over {frames} frames ({:.2} ms/frame; inference avg {:.2} ms, peak {:.2} ms)",
        model
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
        frames as f64 / secs,
        secs * 1e3 / frames as f64,
        m.avg_ms,
        m.peak_ms
    );
    println!(
        "ring: {:?}; VRAM (current, peak): {:?}",
        gpu.ring_metrics(),
        ctx.vram_usage()
    );
    block_on(gpu.shutdown()).ok();
    drop(gpu);

    // The same throughput with the CUDA provider's NHWC preference, for comparison.
    let mut nhwc_config = config(EpPolicy::Cuda);
    nhwc_config.cuda_prefer_nhwc = true;
    let nhwc = TensorRtBackend::new(nhwc_config, ctx.clone(), runtime);
    block_on(nhwc.initialize()).expect("CUDA backend (NHWC)");
    let secs = time_frames(&nhwc, &input, frames);
    println!(
        "throughput 1920x1080 with prefer_nhwc: {:.1} fps over {frames} frames ({:.2} ms/frame)",
        frames as f64 / secs,
        secs * 1e3 / frames as f64
    );
    block_on(nhwc.shutdown()).ok();
    if worst_db < bar_db {
        eprintln!(
            "FAIL: CUDA EP output is {worst_db:.1} dB from the CPU backend's (need >= {bar_db} dB, {precision})"
        );
        std::process::exit(1);
    }
}
