//! Throughput of each colour kernel at 1920x1080 and 3840x2160, as GB/s of compulsory
//! traffic (surface read + tensor written, or the reverse) and as a fraction of the
//! device-to-device copy bandwidth measured in the same run. Needs a GPU.
//!
//! Usage: kernel_throughput [--json PATH]

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, sys::CUevent_flags};
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};
use rave_core::gpu::GpuContext;
use rave_core::types::PixelFormat;
use rave_cuda::gpu_kernels::{ALL_LAYOUTS, ColorKernels, DeviceYuv};
use rave_cuda::packing::PlaneLayout;

const ITERS: usize = 50;

fn addr(s: &CudaSlice<u8>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// Mean milliseconds of `work` over ITERS runs, timed with CUDA events.
fn time_ms(ctx: &GpuContext, stream: &Arc<CudaStream>, mut work: impl FnMut()) -> f64 {
    for _ in 0..3 {
        work();
    }
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.cuda().new_event(flags).unwrap();
    let end = ctx.cuda().new_event(flags).unwrap();
    start.record(stream).unwrap();
    for _ in 0..ITERS {
        work();
    }
    end.record(stream).unwrap();
    end.synchronize().unwrap();
    f64::from(start.elapsed_ms(&end).unwrap()) / ITERS as f64
}

fn main() {
    let json_path = std::env::args().skip_while(|a| a != "--json").nth(1);
    let ctx = GpuContext::new(0).unwrap_or_else(|e| {
        eprintln!("kernel_throughput: {e}");
        std::process::exit(6);
    });
    let kernels = ColorKernels::load(ctx.cuda()).expect("kernels");
    let regs: Vec<String> = kernels
        .register_counts()
        .into_iter()
        .map(|(n, r)| format!("{n}={r}"))
        .collect();
    println!("registers per thread: {}", regs.join(" "));
    let stream = ctx.streams().preprocess.clone();
    let copy_bytes = 512usize << 20;
    let a = stream.alloc_zeros::<u8>(copy_bytes).unwrap();
    let mut b = stream.alloc_zeros::<u8>(copy_bytes).unwrap();
    let copy_ms = time_ms(&ctx, &stream, || stream.memcpy_dtod(&a, &mut b).unwrap());
    let copy_gbs = 2.0 * copy_bytes as f64 / (copy_ms * 1e6);
    drop((a, b));
    println!(
        "device-to-device copy: {copy_gbs:.1} GB/s (read + write, {} MiB)",
        copy_bytes >> 20
    );
    println!(
        "{:<26} {:>10} {:>9} {:>9} {:>8}",
        "kernel", "size", "ms", "GB/s", "of copy"
    );
    let color = ColorInfo {
        matrix: ColorMatrix::Bt709,
        range: ColorRange::Limited,
        bit_depth: 8,
    };
    let mut rows = Vec::new();
    for (w, h) in [(1920u32, 1080u32), (3840, 2160)] {
        for layout in ALL_LAYOUTS {
            let pl = PlaneLayout::new(layout, w, h, 256);
            let surface = stream.alloc_zeros::<u8>(pl.bytes).unwrap();
            let yuv = DeviceYuv::from_base(addr(&surface, &stream), pl);
            for fmt in [PixelFormat::RgbPlanarF32, PixelFormat::RgbPlanarF16] {
                let tensor_bytes = 3 * (w * h) as usize * fmt.element_bytes();
                let tensor = stream.alloc_zeros::<u8>(tensor_bytes).unwrap();
                let t = addr(&tensor, &stream);
                let color = ColorInfo {
                    bit_depth: layout.bit_depth(),
                    ..color
                };
                let traffic = (pl.bytes + tensor_bytes) as f64;
                let to_rgb = time_ms(&ctx, &stream, || {
                    // SAFETY: `surface` and `tensor`, allocated above for the layout's bytes
                    // and 3 * w * h elements, live past the timing's stream sync.
                    unsafe { kernels.yuv_to_rgb(&stream, &yuv, t, fmt, &color) }.unwrap()
                });
                let to_yuv = time_ms(&ctx, &stream, || {
                    // SAFETY: as above.
                    unsafe { kernels.rgb_to_yuv(&stream, t, fmt, &yuv, &color) }.unwrap()
                });
                let t_name = if fmt == PixelFormat::RgbPlanarF32 {
                    "f32"
                } else {
                    "f16"
                };
                for (name, ms) in [
                    (format!("{layout:?}->rgb_{t_name}"), to_rgb),
                    (format!("rgb_{t_name}->{layout:?}"), to_yuv),
                ] {
                    let gbs = traffic / (ms * 1e6);
                    println!(
                        "{name:<26} {:>10} {ms:>9.4} {gbs:>9.1} {:>8.2}",
                        format!("{w}x{h}"),
                        gbs / copy_gbs
                    );
                    rows.push(serde_json::json!({"kernel": name, "width": w, "height": h, "ms": ms, "gb_s": gbs, "fraction_of_copy": gbs / copy_gbs}));
                }
            }
        }
    }
    if let Some(path) = json_path {
        let doc = serde_json::json!({"copy_gb_s": copy_gbs, "kernels": rows});
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
