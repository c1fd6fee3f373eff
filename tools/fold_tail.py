#!/usr/bin/env python3
"""Rewrite the tail of realesr-animevideov3-x2 into an equivalent, much cheaper one.

The ncnn x2 model is the x4 network followed by a bicubic downscale:
    c = Conv(h)  (48 ch)  ->  DepthToSpace(4)  ->  + Nearest4x(input)  ->  Cubic 0.5x
which builds two 8K intermediates per 1080p frame (and, on the CUDA provider, hundreds of
layout transposes of them). Every step after the last convolution is linear, and the cubic
filter at scale 1/2 (half_pixel, a = -0.75) always samples at t = 0.5 with weights
(-0.09375, 0.59375, 0.59375, -0.09375) on clamped 8K coordinates. So the tail is exactly one
3x3 convolution from the 48 sub-pixel channels (plus 3x3 taps on the input) to 12 channels,
then DepthToSpace(2). Clamping at the 8K edges is reproduced by padding `c` with its edge
row/column with the sub-pixel channels remapped, and the input with edge padding. The result
equals the original up to float rounding (tools/tests checks it on the CPU).

Usage: fold_tail.py IN.onnx OUT.onnx   (tools/ncnn2onnx.py applies it to the x2 model)
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

W_FAR, W_NEAR = -0.09375, 0.59375


class NotFoldable(ValueError):
    """The graph does not end in the x4-then-cubic-halve tail this tool folds."""


def fail(msg):
    raise NotFoldable(msg)


def find_tail(graph):
    by_out = {o: n for n in graph.node for o in n.output}
    out_name = graph.output[0].name
    node = by_out[out_name]
    if node.op_type == "Identity":
        node = by_out[node.input[0]]
    cubic = node
    attrs = {a.name: helper.get_attribute_value(a) for a in cubic.attribute}
    if cubic.op_type != "Resize" or attrs.get("mode") != b"cubic" or attrs.get("coordinate_transformation_mode") != b"half_pixel":
        fail("the graph does not end in a half_pixel cubic Resize")
    if abs(attrs.get("cubic_coeff_a", -0.75) + 0.75) > 1e-6 or attrs.get("exclude_outside", 0) != 0:
        fail("unexpected cubic parameters")
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    scales = inits.get(cubic.input[2])
    if scales is None or not np.allclose(scales, [1, 1, 0.5, 0.5]):
        fail("the cubic Resize does not halve the size")
    add = by_out[cubic.input[0]]
    if add.op_type != "Add":
        fail("no Add before the cubic Resize")
    d2s = next((by_out[i] for i in add.input if by_out.get(i) is not None and by_out[i].op_type == "DepthToSpace"), None)
    near = next((by_out[i] for i in add.input if by_out.get(i) is not None and by_out[i].op_type == "Resize"), None)
    if d2s is None or near is None:
        fail("the Add does not join DepthToSpace and a nearest Resize")
    d2s_attrs = {a.name: helper.get_attribute_value(a) for a in d2s.attribute}
    if d2s_attrs.get("blocksize") != 4 or d2s_attrs.get("mode", b"DCR") != b"CRD":
        fail("DepthToSpace is not blocksize 4, CRD")
    near_attrs = {a.name: helper.get_attribute_value(a) for a in near.attribute}
    if near_attrs.get("mode") != b"nearest" or not np.allclose(inits.get(near.input[2]), [1, 1, 4, 4]):
        fail("the skip branch is not a nearest 4x Resize")
    if near_attrs.get("coordinate_transformation_mode") != b"asymmetric" or near_attrs.get("nearest_mode") != b"floor":
        fail("the nearest Resize is not asymmetric/floor")
    if near.input[0] != graph.input[0].name:
        fail("the nearest Resize does not read the model input")
    dropped = {o for node in (cubic, add, d2s, near, by_out[out_name]) for o in node.output}
    return d2s.input[0], dropped


def taps(j):
    """(offset in low-res pixels, sub-pixel index 0..3, weight) of output phase j."""
    if j == 0:
        return [(-1, 3, W_FAR), (0, 0, W_NEAR), (0, 1, W_NEAR), (0, 2, W_FAR)]
    return [(0, 1, W_FAR), (0, 2, W_NEAR), (0, 3, W_NEAR), (1, 0, W_FAR)]


def skip_taps(j):
    """Taps of the nearest-4x skip branch on the input (edge-padded)."""
    if j == 0:
        return [(-1, W_FAR), (0, 2 * W_NEAR + W_FAR)]
    return [(0, 2 * W_NEAR + W_FAR), (1, W_FAR)]


def folded_weights():
    k = np.zeros((12, 48 + 3, 3, 3), dtype=np.float32)
    for color in range(3):
        for jy in range(2):
            for jx in range(2):
                o = color * 4 + jy * 2 + jx
                for oy, sy, wy in taps(jy):
                    for ox, sx, wx in taps(jx):
                        k[o, color * 16 + sy * 4 + sx, oy + 1, ox + 1] += wy * wx
                for oy, wy in skip_taps(jy):
                    for ox, wx in skip_taps(jx):
                        k[o, 48 + color, oy + 1, ox + 1] += wy * wx
    return k


def remap(axis_sub, src, dst):
    """Channel indices of `c` where sub-pixel `dst` along `axis_sub` takes sub-pixel `src`."""
    idx = np.arange(48, dtype=np.int64)
    for color in range(3):
        for a in range(4):
            dy, dx = (dst, a) if axis_sub == "y" else (a, dst)
            sy, sx = (src, a) if axis_sub == "y" else (a, src)
            idx[color * 16 + dy * 4 + dx] = color * 16 + sy * 4 + sx
    return idx


def fold(model):
    """Return `model` with its tail folded; raises NotFoldable when the pattern is absent."""
    g = model.graph
    c, dropped = find_tail(g)
    x = g.input[0].name
    keep = [node for node in g.node if not set(node.output) & dropped]
    consts = {
        "ft_k": folded_weights(),
        "ft_top": remap("y", 0, 3), "ft_bottom": remap("y", 3, 0),
        "ft_left": remap("x", 0, 3), "ft_right": remap("x", 3, 0),
        "ft_0": np.array([0], np.int64), "ft_1": np.array([1], np.int64), "ft_m1": np.array([-1], np.int64),
        "ft_big": np.array([2**62], np.int64), "ft_ax2": np.array([2], np.int64), "ft_ax3": np.array([3], np.int64),
        "ft_pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
    }
    n = helper.make_node
    new = [
        # Edge rows of c with the sub-pixel rows remapped as 8K clamping would read them.
        n("Slice", [c, "ft_0", "ft_1", "ft_ax2"], ["ft_row0"]),
        n("Slice", [c, "ft_m1", "ft_big", "ft_ax2"], ["ft_rowN"]),
        n("Gather", ["ft_row0", "ft_top"], ["ft_top_row"], axis=1),
        n("Gather", ["ft_rowN", "ft_bottom"], ["ft_bottom_row"], axis=1),
        n("Concat", ["ft_top_row", c, "ft_bottom_row"], ["ft_c_h"], axis=2),
        n("Slice", ["ft_c_h", "ft_0", "ft_1", "ft_ax3"], ["ft_col0"]),
        n("Slice", ["ft_c_h", "ft_m1", "ft_big", "ft_ax3"], ["ft_colN"]),
        n("Gather", ["ft_col0", "ft_left"], ["ft_left_col"], axis=1),
        n("Gather", ["ft_colN", "ft_right"], ["ft_right_col"], axis=1),
        n("Concat", ["ft_left_col", "ft_c_h", "ft_right_col"], ["ft_c_pad"], axis=3),
        n("Pad", [x, "ft_pads"], ["ft_x_pad"], mode="edge"),
        n("Concat", ["ft_c_pad", "ft_x_pad"], ["ft_cat"], axis=1),
        n("Conv", ["ft_cat", "ft_k"], ["ft_out12"], kernel_shape=[3, 3], pads=[0, 0, 0, 0]),
        n("DepthToSpace", ["ft_out12"], [g.output[0].name], blocksize=2, mode="CRD"),
    ]
    del g.node[:]
    g.node.extend(keep + new)
    used = {i for node in g.node for i in node.input}
    kept_inits = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept_inits + [numpy_helper.from_array(v, k) for k, v in consts.items()])
    onnx.checker.check_model(model)
    return model


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        model = fold(onnx.load(argv[1]))
    except NotFoldable as e:
        print(f"fold_tail: {argv[1]}: {e}", file=sys.stderr)
        return 1
    onnx.save(model, argv[2])
    print(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
