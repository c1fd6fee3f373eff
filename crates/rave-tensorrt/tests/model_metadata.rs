//! Metadata extraction on real ONNX files through a CPU session: names, channels, static or
//! dynamic sizes, tensor precision, batch axis, scale from shapes or from a probe run, and
//! clear rejections of models that are not image-to-image.

mod common;

use common::{fixture, runtime};
use rave_core::types::PixelFormat;
use rave_tensorrt::LoadedModel;

#[test]
fn dynamic_model_scale_comes_from_a_probe_run() {
    let m = LoadedModel::inspect(runtime(), &fixture("nearest_x2.onnx")).unwrap();
    assert_eq!(m.scale, 2);
    assert_eq!(
        (m.input_name.as_str(), m.output_name.as_str()),
        ("input", "output")
    );
    assert_eq!(m.input_channels, 3);
    assert_eq!(m.min_input_hw, (1, 1));
    assert_eq!(m.max_input_hw, (u32::MAX, u32::MAX));
    assert_eq!(m.tensor_format, PixelFormat::RgbPlanarF32);
    assert_eq!(m.fixed_batch, None, "batch axis is dynamic");
}

#[test]
fn static_model_scale_and_size_come_from_the_shapes() {
    let m = LoadedModel::inspect(runtime(), &fixture("fixed_64x48_x2.onnx")).unwrap();
    assert_eq!(m.scale, 2);
    assert_eq!((m.min_input_hw, m.max_input_hw), ((48, 64), (48, 64)));
    assert!(m.accepts(64, 48) && !m.accepts(48, 64));
    assert_eq!(m.fixed_batch, Some(1));
}

#[test]
fn half_precision_model_is_described_and_refused_by_the_cpu_backend() {
    let path = fixture("nearest_x2_fp16.onnx");
    let m = LoadedModel::inspect(runtime(), &path).unwrap();
    assert_eq!(m.tensor_format, PixelFormat::RgbPlanarF16);
    assert_eq!(m.scale, 2, "probe run in float16");
    let err = LoadedModel::load_cpu(
        runtime(),
        &path,
        &rave_tensorrt::ModelOptions { threads: 1 },
    )
    .unwrap_err();
    assert_eq!(err.kind(), "model_metadata");
    assert!(err.to_string().contains("float16"), "{err}");
}

#[test]
fn non_image_models_are_rejected_with_the_reason() {
    for (name, why) in [
        ("rank3.onnx", "rank 3"),
        ("gray.onnx", "1 channels"),
        ("half_scale.onnx", "not a whole upscale factor"),
    ] {
        let err = LoadedModel::inspect(runtime(), &fixture(name)).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), "model_metadata", "{name}: {text}");
        assert!(text.contains(why), "{name}: {text}");
        assert!(text.contains(name), "the error names the file: {text}");
    }
}

#[test]
fn a_file_that_is_not_onnx_is_invalid_and_named() {
    let err = LoadedModel::inspect(runtime(), &fixture("not_onnx.onnx")).unwrap_err();
    assert_eq!(err.kind(), "model_invalid");
    assert!(err.to_string().contains("not_onnx.onnx"), "{err}");
}

#[test]
fn a_model_that_needs_a_minimum_size_is_probed_at_a_size_it_takes() {
    // A 16x16 probe frame fails in its 20x20 pooling stage; 64x64 and 40x24 run.
    let m = LoadedModel::inspect(runtime(), &fixture("min20_x2.onnx")).unwrap();
    assert_eq!(m.scale, 2);
}

#[test]
fn a_model_whose_sides_must_be_multiples_of_a_block_says_which() {
    // The side multiple is measured: 1 for most models, the block of a space-to-depth stage.
    for (name, multiple) in [
        ("nearest_x2.onnx", 1),
        ("min20_x2.onnx", 1),
        ("blocks4_x2.onnx", 4),
        ("blocks32_x2.onnx", 32),
        ("fixed_64x64_x2.onnx", 1),
        // 17x17 runs but gives 36x36: a size it does not take, not a model to refuse.
        ("strided_x2.onnx", 2),
    ] {
        let m = LoadedModel::inspect(runtime(), &fixture(name)).unwrap();
        assert_eq!((m.scale, m.side_multiple), (2, multiple), "{name}");
    }
    let m = LoadedModel::inspect(runtime(), &fixture("blocks4_x2.onnx")).unwrap();
    assert!(m.accepts(20, 8) && !m.accepts(18, 8) && !m.accepts(20, 6));
    assert_eq!(m.padded_size(66, 38), (68, 40));
}

#[test]
fn a_model_of_blocks_larger_than_rave_pads_is_refused_up_front() {
    // 16x16 and 64x64 fail, 256x256 runs, and no odd multiple of 1 to 64 past it does:
    // most frames would fail, and RAVE pads to blocks of 64 at most.
    let e = LoadedModel::inspect(runtime(), &fixture("blocks128_x2.onnx")).unwrap_err();
    assert_eq!((e.family().exit_code(), e.kind()), (5, "model_metadata"));
    let text = e.to_string();
    assert!(
        text.contains("blocks128_x2.onnx: the model runs on a 256x256 frame but not on 16x16, 64x64, 257x257, 258x258, 260x260, 264x264, 272x272, 288x288, 320x320 (")
            && text.contains("a block over 64 or not a power of two"),
        "{text}"
    );
}

#[test]
fn a_model_of_blocks_of_three_is_refused_up_front_saying_why() {
    // 16x16, 64x64 and 256x256 fail (no multiple of 3), 240x240 runs: a model problem
    // (exit 5, model_metadata), not a failed run of the runtime.
    let e = LoadedModel::inspect(runtime(), &fixture("blocks3_x2.onnx")).unwrap_err();
    assert_eq!(
        (e.family().exit_code(), e.kind()),
        (5, "model_metadata"),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("blocks3_x2.onnx: the model runs on a 240x240 frame but not on 16x16, 64x64, 256x256, 241x241, ")
            && text.contains("not a power of two")
            && text.contains("export it so that it pads its input"),
        "{text}"
    );
}
