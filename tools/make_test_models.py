#!/usr/bin/env python3
"""Write the tiny ONNX models the Rust tests use into tests/fixtures/.

- nearest_x2.onnx: a valid "super-resolution" model, nearest-neighbour x2, dynamic H/W
  (its output is exactly predictable, so pipeline tests can check pixels precisely).
- nearest_x2_fp16.onnx: the same with float16 input and output (the GPU's FP16 tensor path).
- fixed_64x48_x2.onnx: the same with a static 1x3x48x64 input (scale from the shapes).
- fixed_64x64_x2.onnx: the same with a static 1x3x64x64 input (a fixed-size model that larger
  frames reach through tiling).
- batch2_x2.onnx: the same with its batch axis fixed at 2 (the CPU path runs one frame at
  a time: refused up front).
- rank3.onnx: input rank 3 -> must be rejected.
- gray.onnx: one-channel input -> must be rejected.
- half_scale.onnx: output half the input size -> must be rejected.
- two_outputs.onnx: the input as it is, then nearest x2, as two outputs -> must be rejected
  (which output is the picture would be a guess).
- blocks32_x2.onnx: nearest x2 behind a space-to-depth/depth-to-space pair of block 32, so
  its sides must be multiples of 32 (a 16x16 probe frame fails, a 64x64 one runs, 65x65 to
  80x80 fail, 96x96 runs) -> RAVE pads frames to multiples of 32.
- blocks4_x2.onnx: the same with block 4 (as a pixel-unshuffle stage of Real-ESRGAN's x1
  models): 16x16 runs, 17x17 and 18x18 fail, 20x20 runs -> frames padded to multiples of 4.
- blocks128_x2.onnx: the same with block 128: 16x16 and 64x64 fail, 256x256 runs, no odd
  multiple of 1 to 64 past it does -> refused (a block over the 64 RAVE pads to).
- blocks3_x2.onnx: the same with block 3 (not a power of two): 16x16, 64x64 and 256x256
  fail, 240x240 runs, no odd multiple of 1 to 64 past it does -> refused (a block RAVE
  does not pad to).
- strided_x2.onnx: a stride-2 3x3 convolution (the centre tap) then nearest x4: x2 on even
  sides, another size on odd ones (17 -> 36) -> frames padded to multiples of 2.
- min20_x2.onnx: nearest x2 plus zero times the mean of a 20x20 average pool of the input,
  so it needs sides of 20 px or more (a 16x16 probe frame fails; 64x64 and 40x24 run).
- padded_x2.onnx: nearest x2, then 16 px of padding right and below: x3 on the 16x16 probe
  frame, another size on any other -> must fail as a model problem, not a bug.
Usage: make_test_models.py [OUT_DIR]
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name):
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / name)


def image(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def nearest_x2(out, name, in_shape, out_shape, elem=TensorProto.FLOAT):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    node = helper.make_node(
        "Resize", ["input", "", "scales"], ["output"], mode="nearest",
        coordinate_transformation_mode="asymmetric", nearest_mode="floor",
    )
    g = helper.make_graph([node], name, [image("input", in_shape, elem)], [image("output", out_shape, elem)], [scales])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def padded_x2(out, name):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    pads = numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 0, 16, 16], dtype=np.int64), "pads")
    nodes = [
        helper.make_node("Resize", ["input", "", "scales"], ["x2"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Pad", ["x2", "pads"], ["output"], mode="constant"),
    ]
    g = helper.make_graph(nodes, name, [image("input", ["n", 3, "h", "w"])],
                          [image("output", ["n", 3, "h2", "w2"])], [scales, pads])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def blocks_x2(out, name, block):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    nodes = [
        helper.make_node("SpaceToDepth", ["input"], ["blocks"], blocksize=block),
        helper.make_node("DepthToSpace", ["blocks"], ["back"], blocksize=block, mode="DCR"),
        helper.make_node("Resize", ["back", "", "scales"], ["output"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    g = helper.make_graph(nodes, name, [image("input", ["n", 3, "h", "w"])],
                          [image("output", ["n", 3, "h2", "w2"])], [scales])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def strided_x2(out, name):
    weights = np.zeros((3, 3, 3, 3), dtype=np.float32)
    for c in range(3):
        weights[c, c, 1, 1] = 1.0
    w = numpy_helper.from_array(weights, "w")
    scales = numpy_helper.from_array(np.array([1, 1, 4, 4], dtype=np.float32), "scales")
    nodes = [
        helper.make_node("Conv", ["input", "w"], ["half"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["half", "", "scales"], ["output"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    g = helper.make_graph(nodes, name, [image("input", ["n", 3, "h", "w"])],
                          [image("output", ["n", 3, "h2", "w2"])], [w, scales])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def two_outputs(out, name):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    nodes = [
        helper.make_node("Identity", ["input"], ["same"]),
        helper.make_node("Resize", ["input", "", "scales"], ["output"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    g = helper.make_graph(nodes, name, [image("input", ["n", 3, "h", "w"])],
                          [image("same", ["n", 3, "h", "w"]), image("output", ["n", 3, "h2", "w2"])],
                          [scales])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def min20_x2(out, name):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    zero = numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")
    nodes = [
        helper.make_node("Resize", ["input", "", "scales"], ["x2"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("AveragePool", ["input"], ["pooled"], kernel_shape=[20, 20]),
        helper.make_node("ReduceMean", ["pooled"], ["mean"], keepdims=1),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
        helper.make_node("Add", ["x2", "nothing"], ["output"]),
    ]
    g = helper.make_graph(nodes, name, [image("input", ["n", 3, "h", "w"])],
                          [image("output", ["n", 3, "h2", "w2"])], [scales, zero])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def unary(out, name, in_shape, out_shape, op="Relu", **attrs):
    node = helper.make_node(op, ["input"], ["output"], **attrs)
    g = helper.make_graph([node], name, [image("input", in_shape)], [image("output", out_shape)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out, name + ".onnx")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests" / "fixtures")
    out.mkdir(parents=True, exist_ok=True)
    nearest_x2(out, "nearest_x2", ["n", 3, "h", "w"], ["n", 3, "h2", "w2"])
    nearest_x2(out, "nearest_x2_fp16", ["n", 3, "h", "w"], ["n", 3, "h2", "w2"], TensorProto.FLOAT16)
    nearest_x2(out, "fixed_64x48_x2", [1, 3, 48, 64], [1, 3, 96, 128])
    nearest_x2(out, "fixed_64x64_x2", [1, 3, 64, 64], [1, 3, 128, 128])
    nearest_x2(out, "batch2_x2", [2, 3, "h", "w"], [2, 3, "h2", "w2"])
    unary(out, "rank3", ["n", 3, "w"], ["n", 3, "w"])
    unary(out, "gray", ["n", 1, "h", "w"], ["n", 1, "h", "w"])
    padded_x2(out, "padded_x2")
    blocks_x2(out, "blocks32_x2", 32)
    blocks_x2(out, "blocks4_x2", 4)
    blocks_x2(out, "blocks128_x2", 128)
    blocks_x2(out, "blocks3_x2", 3)
    strided_x2(out, "strided_x2")
    two_outputs(out, "two_outputs")
    min20_x2(out, "min20_x2")
    unary(out, "half_scale", ["n", 3, "h", "w"], ["n", 3, "h2", "w2"], op="AveragePool", kernel_shape=[2, 2], strides=[2, 2])
    print(out)


if __name__ == "__main__":
    main()
