//! The CPU backend behind the `Upscaler` contract on real ONNX files: a micro-batch in one
//! call gives what the same frames give one call each (in order), a model fixed at batch 1
//! takes one frame a call, calls the contract rules out are refused, and the interrupter
//! stops the runs.

mod common;

use common::{cpu_backend, fixture, runtime};
use rave_core::backend::Upscaler;
use rave_core::batch::Batching;
use rave_core::frame::RgbImage;
use rave_tensorrt::{CpuBackend, ModelOptions};

/// A deterministic planar image with values in [0, 1], different for every `seed`.
fn image(w: u32, h: u32, seed: u64) -> RgbImage {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let data = (0..3 * w * h)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    RgbImage::new(w, h, data).unwrap()
}

#[test]
fn a_batch_in_one_call_equals_the_frames_one_call_each() {
    for name in [
        "nearest_x2.onnx",
        "arch/compact_x2.onnx",
        "arch/rrdb_x4_nf32.onnx",
    ] {
        let b = cpu_backend(name, 3);
        assert_eq!(b.batching().max_batch, 3, "{name}: a dynamic batch axis");
        let s = b.model().unwrap().scale;
        let frames: Vec<RgbImage> = (0..3).map(|k| image(13, 9, k + 1)).collect();
        let batched = b.upscale(&frames).unwrap();
        assert_eq!(batched.len(), 3);
        for (k, (frame, got)) in frames.iter().zip(&batched).enumerate() {
            let alone = b.upscale(std::slice::from_ref(frame)).unwrap().remove(0);
            assert_eq!((got.width, got.height), (13 * s, 9 * s), "{name}");
            let worst = got
                .data
                .iter()
                .zip(&alone.data)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            println!("{name} frame {k}: batched vs alone, max abs difference {worst:.2e}");
            assert!(worst <= 1e-5, "{name} frame {k}: {worst}");
        }
        // The frames are different, so a mixed-up order would show.
        assert_ne!(batched[0].data, batched[1].data);
    }
}

#[test]
fn a_model_fixed_at_batch_one_takes_one_frame_a_call() {
    let b = cpu_backend("fixed_64x48_x2.onnx", 4);
    assert_eq!(b.batching().max_batch, 1);
    let one = b.upscale(&[image(64, 48, 1)]).unwrap();
    assert_eq!((one[0].width, one[0].height), (128, 96));
    let err = b
        .upscale(&[image(64, 48, 1), image(64, 48, 2)])
        .unwrap_err();
    assert_eq!(err.kind(), "invariant_violation", "{err}");
}

#[test]
fn calls_outside_the_contract_are_refused() {
    let b = cpu_backend("nearest_x2.onnx", 2);
    assert!(b.upscale(&[]).unwrap().is_empty());
    let three: Vec<RgbImage> = (0..3).map(|k| image(8, 8, k)).collect();
    assert!(b.upscale(&three).is_err(), "more than max_batch");
    let err = b.upscale(&[image(8, 8, 1), image(9, 8, 2)]).unwrap_err();
    assert!(err.to_string().contains("8x8 and 9x8"), "{err}");
    let err = CpuBackend::new(
        runtime(),
        &fixture("nearest_x2.onnx"),
        &ModelOptions { threads: 1 },
    )
    .unwrap()
    .with_batching(Batching {
        max_batch: 0,
        ..Batching::default()
    })
    .err()
    .expect("a batch of 0 is refused");
    assert_eq!(err.kind(), "config");
}

#[test]
fn the_interrupter_stops_the_runs() {
    let b = cpu_backend("arch/compact_x2.onnx", 1);
    b.upscale(&[image(16, 16, 1)]).unwrap();
    b.interrupter()
        .expect("ONNX Runtime's terminate flag")
        .interrupt();
    let err = b.upscale(&[image(16, 16, 1)]).unwrap_err();
    assert_eq!(err.kind(), "inference", "{err}");
}
