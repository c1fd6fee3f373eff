#!/usr/bin/env python3
"""PyTorch reference for the GPU backend: runs an ONNX super-resolution graph of the ops
RAVE's converted models use (Conv, PRelu, LeakyRelu, DepthToSpace, Resize, Add, Mul, Sum,
Concat, Slice, Gather, Pad, Identity, Cast) as
plain PyTorch operations, the way people run these models today, and times it.

  torch_sr_bench.py export MODEL.onnx SPEC.npz      (here, needs onnx: weights + node list)
  torch_sr_bench.py bench SPEC.npz [W H FRAMES] [--compile]   (on the GPU machine, needs torch)
  torch_sr_bench.py check SPEC.npz MODEL.onnx       (the interpreter against onnxruntime CPU)

bench prints fps for FP32 and FP16 (channels_last, cudnn.benchmark), batch 1, at W x H
(default 1920x1080), timed with CUDA events after warm-up, and the FP16-vs-FP32 PSNR; with
--compile also FP16 through torch.compile(mode="max-autotune") (the compile and autotuning
happen in the warm-up and are reported apart), the fastest peer a PyTorch user has.
"""
import json
import os
import sys


def export(model_path, out):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(model_path)
    arrays = {f"w{i}": numpy_helper.to_array(t) for i, t in enumerate(m.graph.initializer)}
    names = {t.name: f"w{i}" for i, t in enumerate(m.graph.initializer)}
    nodes = []
    for n in m.graph.node:
        attrs = {}
        for a in n.attribute:
            v = helper.get_attribute_value(a)
            attrs[a.name] = v.decode() if isinstance(v, bytes) else (list(v) if isinstance(v, (list, tuple)) or hasattr(v, "__iter__") and not isinstance(v, str) else v)
        nodes.append({"op": n.op_type, "in": list(n.input), "out": list(n.output), "attrs": attrs})
    spec = {"nodes": nodes, "params": names, "input": m.graph.input[0].name, "output": m.graph.output[0].name}
    np.savez(out, spec=np.frombuffer(json.dumps(spec).encode(), dtype=np.uint8), **arrays)
    print(out)


def build(spec_path, device, dtype):
    import numpy as np
    import torch
    import torch.nn.functional as F

    z = np.load(spec_path)
    spec = json.loads(bytes(z["spec"]).decode())
    params = {k: torch.from_numpy(np.array(z[v])).to(device) for k, v in spec["params"].items()}
    for k, t in params.items():
        if t.is_floating_point():
            params[k] = t.to(dtype)
    # Shapes, pads and scales as Python numbers, read here rather than in run(): a .tolist()
    # inside run() would break torch.compile's graph at every such node.
    consts = {k: np.array(z[v]).reshape(-1).tolist() for k, v in spec["params"].items() if np.array(z[v]).size <= 8}

    # The last node reading each value: it is dropped after that (RRDBNet's hundreds of
    # intermediate maps would not fit in memory all at once).
    last_use = {}
    for k, n in enumerate(spec["nodes"]):
        for name in n["in"]:
            last_use[name] = k

    def run(x):
        env = {spec["input"]: x}
        get = lambda n: env[n] if n in env else params[n]
        for k, n in enumerate(spec["nodes"]):
            op, a, i = n["op"], n["attrs"], n["in"]
            if op == "Conv":
                p = a.get("pads", [0, 0, 0, 0])
                y = F.conv2d(get(i[0]), get(i[1]), get(i[2]) if len(i) > 2 else None, padding=(p[0], p[1]))
            elif op == "PRelu":
                y = F.prelu(get(i[0]), get(i[1]).reshape(-1))
            elif op == "DepthToSpace":
                y = F.pixel_shuffle(get(i[0]), a["blocksize"])
            elif op == "Resize":
                s = [float(v) for v in consts[i[2]]]
                mode = "nearest" if a.get("mode") == "nearest" else "bicubic"
                kw = {} if mode == "nearest" else {"align_corners": False}
                y = F.interpolate(get(i[0]), scale_factor=(s[2], s[3]), mode=mode, **kw)
            elif op == "LeakyRelu":
                y = F.leaky_relu(get(i[0]), a.get("alpha", 0.01))
            elif op == "Add":
                y = get(i[0]) + get(i[1])
            elif op == "Mul":
                y = get(i[0]) * get(i[1])
            elif op == "Sum":
                y = get(i[0])
                for other in i[1:]:
                    y = y + get(other)
            elif op in ("Identity", "Cast"):
                y = get(i[0])
            elif op == "Slice":
                starts, ends, axes = (consts[name] for name in i[1:4])
                y = get(i[0])
                for st, en, ax in zip(starts, ends, axes):
                    size = y.shape[ax]
                    st, en = max(st + size, 0) if st < 0 else min(st, size), max(en + size, 0) if en < 0 else min(en, size)
                    y = y.narrow(ax, st, en - st)
            elif op == "Gather":
                y = torch.index_select(get(i[0]), a.get("axis", 0), params[i[1]].reshape(-1).long())
            elif op == "Concat":
                y = torch.cat([get(n) for n in i], dim=a["axis"])
            elif op == "Pad":
                if a.get("mode") != "edge":
                    raise SystemExit("Pad other than edge mode not supported by this reference")
                p = consts[i[1]]  # [n, c, h, w] begins then ends
                y = F.pad(get(i[0]), (p[3], p[7], p[2], p[6]), mode="replicate")
            else:
                raise SystemExit(f"op {op} not supported by this reference")
            env[n["out"][0]] = y
            for name in i:
                if last_use.get(name) == k and name != spec["output"]:
                    env.pop(name, None)
        return env[spec["output"]]

    return run


def bench(spec_path, w=1920, h=1080, frames=100, compiled=False):
    import time

    import torch

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    x32 = torch.rand(1, 3, h, w, device=dev)
    results = {}
    outs = {}
    variants = [("fp32", torch.float32, False), ("fp16", torch.float16, False)]
    if compiled:
        variants.append(("fp16-compiled-max-autotune", torch.float16, True))
    for name, dtype, compile_it in variants:
        run = build(spec_path, dev, dtype)
        if compile_it:
            run = torch.compile(run, mode="max-autotune")
        x = x32.to(dtype).contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            t0 = time.perf_counter()
            for _ in range(5):
                y = run(x)
            torch.cuda.synchronize()
            if compile_it:
                print(f"torch {name}: compile + autotune + 5 warm-up frames {time.perf_counter() - t0:.1f} s")
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(frames):
                y = run(x)
            end.record()
            torch.cuda.synchronize()
        ms = start.elapsed_time(end) / frames
        results[name] = 1000.0 / ms
        outs[name] = y.float().clamp(0, 1)
        print(f"torch {name} {w}x{h} batch 1 channels_last cudnn.benchmark: {1000.0 / ms:.1f} fps ({ms:.2f} ms/frame)")
    mse = torch.mean((outs["fp16"] - outs["fp32"]) ** 2).item()
    psnr = float("inf") if mse == 0 else 10 * torch.log10(torch.tensor(1.0 / mse)).item()
    print(f"torch fp16 vs fp32 PSNR: {psnr:.1f} dB")
    print(json.dumps({"torch_fps": results, "fp16_vs_fp32_psnr_db": psnr}))


def check(spec_path, model_path, w=64, h=48):
    """This interpreter against ONNX Runtime (CPU) on the original model, FP32."""
    import numpy as np
    # No usage telemetry to Microsoft (ONNX Runtime 1.29+ sends it on Linux).
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort
    import torch

    x = np.random.default_rng(1).random((1, 3, h, w), dtype=np.float32)
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    feed = sess.get_inputs()[0]
    # A float16 model (tools/to_fp16.py) takes and gives half precision.
    x_in = x.astype(np.float16) if "float16" in feed.type else x
    x = x_in.astype(np.float32)
    want = sess.run(None, {feed.name: x_in})[0].astype(np.float32)
    with torch.inference_mode():
        got = build(spec_path, torch.device("cuda"), torch.float32)(torch.from_numpy(x).cuda()).cpu().numpy()
    mse = float(np.mean((got - want) ** 2))
    psnr = float("inf") if mse == 0 else 10 * np.log10(1.0 / mse)
    print(f"torch interpreter vs onnxruntime CPU at {w}x{h}: PSNR {psnr:.1f} dB, max abs {np.abs(got - want).max():.2e}")


def main(argv):
    if len(argv) >= 4 and argv[1] == "export":
        export(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] == "check":
        check(argv[2], argv[3])
    elif len(argv) >= 3 and argv[1] == "bench":
        compiled = "--compile" in argv
        rest = [int(v) for v in argv[3:] if v != "--compile"][:3]
        bench(argv[2], *rest, compiled=compiled)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
