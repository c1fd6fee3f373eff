//! The reusable C-API IO binding, exercised on the CPU with host memory (the same calls the
//! GPU backend makes with device memory): the model reads the bound input in place, writes
//! the bound output in place, the audit reads back that very address, and rebinding for the
//! next frame (other buffers, other sizes, batch > 1, float16) works.

mod common;

use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::Session;
use rave_core::types::PixelFormat;
use rave_tensorrt::device_binding::DeviceBinding;

fn cpu_memory() -> MemoryInfo<'static> {
    MemoryInfo::new(
        AllocationDevice::CPU,
        0,
        AllocatorType::Device,
        MemoryType::Default,
    )
    .unwrap()
}

fn session(name: &str) -> Session {
    Session::builder(common::runtime().environment())
        .unwrap()
        .commit_from_file(common::fixture(name))
        .unwrap()
}

/// Nearest-neighbour x2 of an NCHW image, the fixture model's exact output.
fn nearest_x2(input: &[f32], n: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0f32; input.len() * 4];
    for p in 0..n * 3 {
        for y in 0..2 * h {
            for x in 0..2 * w {
                out[p * 4 * h * w + y * 2 * w + x] = input[p * h * w + (y / 2) * w + x / 2];
            }
        }
    }
    out
}

/// A session of fixture `name` and a binding of its tensors in host memory.
fn bound(name: &str, format: PixelFormat) -> (Session, DeviceBinding) {
    let s = session(name);
    let b = DeviceBinding::new(&s, "input", "output", format, cpu_memory(), 0, false).unwrap();
    (s, b)
}

#[test]
fn runs_in_place_on_bound_memory_and_rebinds_per_frame() {
    let (mut s, mut b) = bound("nearest_x2.onnx", PixelFormat::RgbPlanarF32);
    for (n, h, w) in [(1usize, 4usize, 6usize), (1, 5, 3), (3, 2, 2)] {
        let input: Vec<f32> = (0..n * 3 * h * w).map(|i| i as f32 * 0.25).collect();
        let mut output = vec![-1f32; input.len() * 4];
        let shape_in = [n as i64, 3, h as i64, w as i64];
        let shape_out = [n as i64, 3, 2 * h as i64, 2 * w as i64];
        let out_addr = output.as_mut_ptr() as u64;
        // SAFETY: host vectors of exactly the shapes' sizes (CPU binding), alive past the run.
        let used = unsafe {
            b.run(
                &mut s,
                input.as_ptr() as u64,
                &shape_in,
                out_addr,
                &shape_out,
                0,
            )
        }
        .unwrap();
        assert_eq!(used, out_addr, "the runtime wrote somewhere else");
        assert_eq!(output, nearest_x2(&input, n, h, w), "{n}x{h}x{w}");
    }
}

#[test]
fn half_precision_tensors_bind_as_float16() {
    let (mut s, mut b) = bound("nearest_x2_fp16.onnx", PixelFormat::RgbPlanarF16);
    let values: Vec<f32> = (0..3 * 2 * 2).map(|i| i as f32 / 8.0).collect();
    let input: Vec<half::f16> = values.iter().map(|v| half::f16::from_f32(*v)).collect();
    let mut output = vec![half::f16::ZERO; input.len() * 4];
    assert_eq!(b.bytes(&[1, 3, 4, 4]), 3 * 16 * 2);
    // SAFETY: host vectors of exactly the shapes' sizes (CPU binding), alive past the run.
    let used = unsafe {
        b.run(
            &mut s,
            input.as_ptr() as u64,
            &[1, 3, 2, 2],
            output.as_mut_ptr() as u64,
            &[1, 3, 4, 4],
            0,
        )
    }
    .unwrap();
    assert_eq!(used, output.as_ptr() as u64);
    let got: Vec<f32> = output.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, nearest_x2(&values, 1, 2, 2));
}

#[test]
fn a_wrong_shape_is_an_inference_error_not_a_crash() {
    let (mut s, mut b) = bound("fixed_64x48_x2.onnx", PixelFormat::RgbPlanarF32);
    let input = vec![0f32; 3 * 10 * 10];
    let mut output = vec![0f32; 3 * 20 * 20];
    // SAFETY: host vectors of exactly the shapes' sizes (CPU binding), alive past the run.
    let err = unsafe {
        b.run(
            &mut s,
            input.as_ptr() as u64,
            &[1, 3, 10, 10],
            output.as_mut_ptr() as u64,
            &[1, 3, 20, 20],
            0,
        )
    }
    .unwrap_err();
    assert_eq!(err.kind(), "inference");
    assert!(err.to_string().contains("running the model"), "{err}");
}
