#!/usr/bin/env python3
"""Write tiny SRVGGNetCompact and RRDBNet ONNX models (fixed-seed random weights) and near
misses of them into tests/fixtures/arch/, for rave-native's recogniser and CPU reference tests.

The graphs have the form RAVE's installed models have (tools/ncnn2onnx.py: PRelu slopes
[C,1,1], DepthToSpace CRD, nearest Resize asymmetric/floor by constant scales, Mul + Sum
residuals in RRDBNet) with a few channels, so ONNX Runtime runs them in milliseconds.

Recognised:
- compact_x2.onnx           conv+PReLU x2, last conv, pixel shuffle x2 + nearest x2 input
- compact_x3_cubic.onnx     the x4 network then a cubic 0.75 Resize (ncnn's animevideov3 x3 form)
- compact_x2_folded.onnx    the x4 network then a cubic 0.5 Resize, folded by tools/fold_tail.py
- compact_x2_fp16.onnx      compact_x2 in float16 (tools/to_fp16.py's conversion)
- compact_torch_shared.onnx compact x2 as torch.onnx.export writes equal parameters: one
                            PReLU slope initializer read through Identity nodes, and the
                            residual's Resize scales as a Constant node
- rrdb_x4.onnx              conv_first, 1 RRDB, trunk conv, 2 nearest x2 + conv stages, conv_hr, conv_last
- rrdb_x2.onnx              the same with 2 RRDBs and one upsampling stage
- rrdb_x4_nf32.onnx         2 RRDBs of 32 features and growth 16: the smallest widths the
                            native engine's kernels take (multiples of 16)
- rrdb_x4_nf32_fp16.onnx    rrdb_x4_nf32 in float16 (its residual scales become 0.19995)
Refused (near misses):
- compact_relu.onnx             Relu instead of the second PReLU
- compact_no_residual.onnx      no nearest-upsampled input added
- compact_dcr.onnx              DepthToSpace mode DCR instead of CRD (pixel shuffle)
- compact_stride2.onnx          a body conv with stride 2
- rrdb_alpha01.onnx             one LeakyRelu with alpha 0.1
- rrdb_no_trunk_residual.onnx   the trunk conv's output not added to conv_first's
- rrdb_scale05.onnx             a dense block's residual scaled by 0.5
Usage: make_arch_fixtures.py [OUT_DIR]
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fold_tail  # noqa: E402


class Builder:
    """Accumulates nodes and initializers with unique names and seeded random weights."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def const(self, value, prefix="k"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name(op), **attrs))
        return out

    def conv(self, x, cin, cout, stride=1):
        w = self.rng.standard_normal((cout, cin, 3, 3)).astype(np.float32) * np.float32(np.sqrt(1.0 / (9 * cin)))
        b = (self.rng.standard_normal(cout) * 0.05).astype(np.float32)
        return self.node("Conv", [x, self.const(w, "w"), self.const(b, "b")],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[stride, stride], dilations=[1, 1])

    def prelu(self, x, c):
        return self.node("PRelu", [x, self.const(self.rng.uniform(0.0, 0.3, (c, 1, 1)).astype(np.float32), "slope")])

    def lrelu(self, x, alpha=0.2):
        return self.node("LeakyRelu", [x], alpha=alpha)

    def resize(self, x, factor, mode="nearest"):
        scales = self.const(np.array([1, 1, factor, factor], np.float32), "scales")
        if mode == "nearest":
            return self.node("Resize", [x, "", scales], mode="nearest",
                             coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        return self.node("Resize", [x, "", scales], mode="cubic", coordinate_transformation_mode="half_pixel",
                         cubic_coeff_a=-0.75, exclude_outside=0)

    def model(self, out, name, elem=TensorProto.FLOAT):
        last = self.nodes[-1]
        last.output[0] = "output"
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("input", elem, ["batch", 3, "height", "width"])],
            [helper.make_tensor_value_info("output", elem, ["batch", 3, "out_height", "out_width"])],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def save(model, out, name):
    onnx.checker.check_model(model)
    onnx.save(model, out / name)


def compact(out, name, feat=8, convs=2, up=2, seed=1, relu_at=None, residual=True, mode="CRD",
            stride_at=None, cubic=None, save_it=True, torch_style=False):
    """torch_style: the forms torch.onnx.export writes when parameters are equal (one
    initializer, read by each PRelu through its own Identity node) and the residual's
    Resize scales as a Constant node."""
    b = Builder(seed)
    x, c = "input", 3
    shared = b.const(b.rng.uniform(0.0, 0.3, (feat, 1, 1)).astype(np.float32), "slope") if torch_style else None
    for i in range(convs):
        x = b.conv(x, c, feat, stride=2 if i == stride_at else 1)
        if i == relu_at:
            x = b.node("Relu", [x])
        elif shared is not None:
            x = b.node("PRelu", [x, b.node("Identity", [shared])])
        else:
            x = b.prelu(x, feat)
        c = feat
    x = b.conv(x, feat, 3 * up * up)
    x = b.node("DepthToSpace", [x], blocksize=up, mode=mode)
    if residual and torch_style:
        scales = b.node("Constant", [], value=numpy_helper.from_array(np.array([1, 1, up, up], np.float32)))
        x = b.node("Add", [x, b.node("Resize", ["input", "", scales], mode="nearest",
                                     coordinate_transformation_mode="asymmetric", nearest_mode="floor")])
    elif residual:
        x = b.node("Add", [x, b.resize("input", up)])
    if cubic is not None:
        x = b.resize(x, cubic, mode="cubic")
    b.node("Identity", [x])
    m = b.model(out, name)
    if save_it:
        save(m, out, name + ".onnx")
    return m


def rrdb(out, name, nf=8, gc=4, blocks=1, ups=2, seed=2, alpha_at=None, trunk_residual=True, scale_at=None):
    b = Builder(seed)
    k = 0  # dense-block conv counter, for alpha_at
    rdb_i = 0

    def dense(x):
        nonlocal k, rdb_i
        outs = [x]
        cin = nf
        for _ in range(4):
            cat = outs[0] if len(outs) == 1 else b.node("Concat", list(outs), axis=1)
            y = b.lrelu(b.conv(cat, cin, gc), 0.1 if k == alpha_at else 0.2)
            k += 1
            outs.append(y)
            cin += gc
        x5 = b.conv(b.node("Concat", list(outs), axis=1), cin, nf)
        s = 0.5 if rdb_i == scale_at else 0.2
        rdb_i += 1
        return b.node("Sum", [b.node("Mul", [x5, b.const(np.array(s, np.float32))]), x])

    feat = b.conv("input", 3, nf)
    x = feat
    for _ in range(blocks):
        y = dense(dense(dense(x)))
        x = b.node("Sum", [b.node("Mul", [y, b.const(np.array(0.2, np.float32))]), x])
    x = b.conv(x, nf, nf)
    if trunk_residual:
        x = b.node("Add", [feat, x])
    for _ in range(ups):
        x = b.lrelu(b.conv(b.resize(x, 2), nf, nf))
    x = b.lrelu(b.conv(x, nf, nf))
    x = b.conv(x, nf, 3)
    b.node("Identity", [x])
    save(b.model(out, name), out, name + ".onnx")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "arch")
    out.mkdir(parents=True, exist_ok=True)
    compact(out, "compact_x2")
    compact(out, "compact_x3_cubic", up=4, seed=3, cubic=0.75)
    x4_halved = compact(out, "compact_x2_folded", feat=6, up=4, seed=4, cubic=0.5, save_it=False)
    save(fold_tail.fold(x4_halved), out, "compact_x2_folded.onnx")
    from onnxconverter_common import float16
    save(float16.convert_float_to_float16(onnx.load(out / "compact_x2.onnx"), keep_io_types=False),
         out, "compact_x2_fp16.onnx")
    rrdb(out, "rrdb_x4")
    rrdb(out, "rrdb_x2", blocks=2, ups=1, seed=5)
    rrdb(out, "rrdb_x4_nf32", nf=32, gc=16, blocks=2, seed=7)
    save(float16.convert_float_to_float16(onnx.load(out / "rrdb_x4_nf32.onnx"), keep_io_types=False),
         out, "rrdb_x4_nf32_fp16.onnx")
    compact(out, "compact_relu", relu_at=1)
    compact(out, "compact_no_residual", residual=False)
    compact(out, "compact_dcr", mode="DCR")
    compact(out, "compact_stride2", stride_at=1)
    rrdb(out, "rrdb_alpha01", alpha_at=6)
    rrdb(out, "rrdb_no_trunk_residual", trunk_residual=False)
    rrdb(out, "rrdb_scale05", scale_at=1)
    compact(out, "compact_torch_shared", convs=3, seed=6, torch_style=True)
    print(out)


if __name__ == "__main__":
    main()
