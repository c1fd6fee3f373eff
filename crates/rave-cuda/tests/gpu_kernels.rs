//! The CUDA colour kernels against the plain Rust reference, on random frames of several
//! sizes (odd ones included), every layout, matrix, range and float type. Needs a GPU:
//! ignored elsewhere, run on the H200 by scripts/gpu_tests.sh.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use half::f16;
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};
use rave_core::frame::{RgbImage, YuvFrame};
use rave_core::gpu::GpuContext;
use rave_core::types::PixelFormat;
use rave_cuda::gpu_kernels::{ALL_LAYOUTS, ColorKernels, DeviceYuv};
use rave_cuda::packing::{PlaneLayout, YuvLayout, pack, unpack};
use rave_cuda::{rgb_to_yuv420, yuv420_to_rgb};

const SIZES: [(u32, u32); 5] = [(2, 2), (7, 5), (33, 17), (641, 359), (1920, 1080)];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn addr(s: &CudaSlice<u8>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

fn random_frame(w: u32, h: u32, depth: u8, rng: &mut Rng) -> YuvFrame {
    let mut f = YuvFrame::zeroed(w, h, depth);
    let max = 1u64 << depth;
    for v in f.y.iter_mut().chain(f.u.iter_mut()).chain(f.v.iter_mut()) {
        *v = (rng.next() % max) as u16;
    }
    f
}

/// Smooth, in-gamut content (so a round trip is not limited by clamping or 4:2:0 loss).
fn smooth_frame(w: u32, h: u32, depth: u8) -> YuvFrame {
    let mut f = YuvFrame::zeroed(w, h, depth);
    let s = 1u32 << (depth - 8);
    for y in 0..h {
        for x in 0..w {
            f.y[(y * w + x) as usize] = ((40 + (x * 7 + y * 13) % 170) * s) as u16;
        }
    }
    f.u.fill((136 * s) as u16);
    f.v.fill((122 * s) as u16);
    f
}

fn colors(depth: u8) -> Vec<ColorInfo> {
    let mut out = Vec::new();
    for matrix in [
        ColorMatrix::Bt601,
        ColorMatrix::Bt709,
        ColorMatrix::Bt2020Ncl,
    ] {
        for range in [ColorRange::Limited, ColorRange::Full] {
            out.push(ColorInfo {
                matrix,
                range,
                bit_depth: depth,
            });
        }
    }
    out
}

struct Gpu {
    ctx: Arc<GpuContext>,
    kernels: ColorKernels,
    stream: Arc<CudaStream>,
}

impl Gpu {
    fn new() -> Self {
        let ctx = GpuContext::new(0).expect("a GPU");
        let kernels = ColorKernels::load(ctx.cuda()).expect("kernels compile");
        let stream = ctx.streams().preprocess.clone();
        Self {
            ctx,
            kernels,
            stream,
        }
    }

    fn to_rgb(
        &self,
        frame: &YuvFrame,
        layout: YuvLayout,
        fmt: PixelFormat,
        color: &ColorInfo,
    ) -> Vec<f32> {
        let pl = PlaneLayout::new(layout, frame.width, frame.height, 256);
        let src = self.stream.clone_htod(&pack(frame, &pl)).unwrap();
        let n = 3 * frame.width as usize * frame.height as usize;
        let dst = self
            .stream
            .alloc_zeros::<u8>(n * fmt.element_bytes())
            .unwrap();
        let yuv = DeviceYuv::from_base(addr(&src, &self.stream), pl);
        // SAFETY: `src` and `dst` were allocated above for the layout's bytes and n elements
        // and live until the copy back below, which synchronizes the stream.
        unsafe {
            self.kernels
                .yuv_to_rgb(&self.stream, &yuv, addr(&dst, &self.stream), fmt, color)
        }
        .unwrap();
        let bytes = self.stream.clone_dtoh(&dst).unwrap();
        decode_floats(&bytes, fmt)
    }

    fn to_yuv(
        &self,
        rgb: &[f32],
        w: u32,
        h: u32,
        fmt: PixelFormat,
        layout: YuvLayout,
        color: &ColorInfo,
    ) -> YuvFrame {
        let src = self.stream.clone_htod(&encode_floats(rgb, fmt)).unwrap();
        let align = if w % 2 == 1 { 1 } else { 256 };
        let pl = PlaneLayout::new(layout, w, h, align);
        let dst = self.stream.alloc_zeros::<u8>(pl.bytes).unwrap();
        let yuv = DeviceYuv::from_base(addr(&dst, &self.stream), pl);
        // SAFETY: as in `to_rgb`: both buffers allocated above, alive past the copy back.
        unsafe {
            self.kernels
                .rgb_to_yuv(&self.stream, addr(&src, &self.stream), fmt, &yuv, color)
        }
        .unwrap();
        unpack(&self.stream.clone_dtoh(&dst).unwrap(), &pl)
    }
}

fn decode_floats(bytes: &[u8], fmt: PixelFormat) -> Vec<f32> {
    match fmt {
        PixelFormat::RgbPlanarF32 => bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        _ => bytes
            .chunks(2)
            .map(|c| f16::from_le_bytes(c.try_into().unwrap()).to_f32())
            .collect(),
    }
}

fn encode_floats(values: &[f32], fmt: PixelFormat) -> Vec<u8> {
    match fmt {
        PixelFormat::RgbPlanarF32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => values
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_le_bytes())
            .collect(),
    }
}

fn max_code_diff(a: &YuvFrame, b: &YuvFrame) -> u16 {
    [(&a.y, &b.y), (&a.u, &b.u), (&a.v, &b.v)]
        .iter()
        .flat_map(|(p, q)| p.iter().zip(q.iter()).map(|(x, y)| x.abs_diff(*y)))
        .max()
        .unwrap_or(0)
}

fn allowed(depth: u8) -> f32 {
    if depth > 8 { 4.0 } else { 1.0 }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn yuv_to_rgb_kernels_match_the_reference() {
    let gpu = Gpu::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut worst = [0f32; 2];
    for layout in ALL_LAYOUTS {
        let depth = layout.bit_depth();
        for (w, h) in SIZES {
            let frame = random_frame(w, h, depth, &mut rng);
            let colors = if w > 1000 {
                colors(depth)[1..2].to_vec()
            } else {
                colors(depth)
            };
            for color in colors {
                let reference = yuv420_to_rgb(&frame, &color);
                for (i, fmt) in [PixelFormat::RgbPlanarF32, PixelFormat::RgbPlanarF16]
                    .into_iter()
                    .enumerate()
                {
                    let got = gpu.to_rgb(&frame, layout, fmt, &color);
                    let scale = ((1u32 << depth) - 1) as f32;
                    let err = got
                        .iter()
                        .zip(&reference.data)
                        .map(|(a, b)| (a - b).abs() * scale)
                        .fold(0f32, f32::max);
                    worst[i] = worst[i].max(err / allowed(depth));
                    assert!(
                        err <= allowed(depth),
                        "{layout:?} {w}x{h} {color:?} {fmt:?}: {err} code values"
                    );
                }
            }
        }
    }
    println!(
        "yuv->rgb worst error as a fraction of the allowance: f32 {:.3}, f16 {:.3}",
        worst[0], worst[1]
    );
    gpu.ctx.sync_all().unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn rgb_to_yuv_kernels_match_the_reference() {
    let gpu = Gpu::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut worst = 0u16;
    for layout in ALL_LAYOUTS {
        let depth = layout.bit_depth();
        for (w, h) in SIZES {
            let n = 3 * (w * h) as usize;
            let colors = if w > 1000 {
                colors(depth)[1..2].to_vec()
            } else {
                colors(depth)
            };
            for fmt in [PixelFormat::RgbPlanarF32, PixelFormat::RgbPlanarF16] {
                // Values the GPU will see exactly (f16 inputs rounded first).
                let rgb: Vec<f32> = (0..n)
                    .map(|_| (rng.next() % 10_001) as f32 / 10_000.0)
                    .map(|v| {
                        if fmt == PixelFormat::RgbPlanarF16 {
                            f16::from_f32(v).to_f32()
                        } else {
                            v
                        }
                    })
                    .collect();
                let image = RgbImage::new(w, h, rgb.clone()).unwrap();
                for color in &colors {
                    let reference = rgb_to_yuv420(&image, color, depth);
                    let got = gpu.to_yuv(&rgb, w, h, fmt, layout, color);
                    let diff = max_code_diff(&got, &reference);
                    worst = worst.max(diff);
                    assert!(
                        f32::from(diff) <= allowed(depth),
                        "{layout:?} {w}x{h} {color:?} {fmt:?}: {diff}"
                    );
                }
            }
        }
    }
    println!("rgb->yuv worst difference: {worst} code value(s)");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn yuv_rgb_yuv_round_trip_within_one_code_value() {
    let gpu = Gpu::new();
    for layout in ALL_LAYOUTS {
        let depth = layout.bit_depth();
        for (w, h) in SIZES {
            let frame = smooth_frame(w, h, depth);
            for color in colors(depth) {
                let rgb = gpu.to_rgb(&frame, layout, PixelFormat::RgbPlanarF32, &color);
                let back = gpu.to_yuv(&rgb, w, h, PixelFormat::RgbPlanarF32, layout, &color);
                let diff = max_code_diff(&back, &frame);
                assert!(diff <= 1, "{layout:?} {w}x{h} {color:?}: {diff}");
            }
        }
    }
}
