#!/usr/bin/env python3
"""Check converted ONNX models against the original ncnn files run by the `ncnn` package.

Both run in fp32 on the same random RGB input; prints max abs error and PSNR per model and
exits non-zero when any model is below the PSNR floor.

Usage: check_models.py --package-dir DIR --onnx-dir DIR [--size 32] [--min-psnr 50]
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

from ncnn2onnx import KNOWN_MODELS


def run_ncnn(param, binary, image_chw):
    import ncnn

    net = ncnn.Net()
    opt = net.opt
    opt.use_vulkan_compute = False
    opt.use_fp16_storage = False
    opt.use_fp16_packed = False
    opt.use_fp16_arithmetic = False
    opt.use_bf16_storage = False
    opt.num_threads = 2
    net.load_param(str(param))
    net.load_model(str(binary))
    ex = net.create_extractor()
    ex.input("data", ncnn.Mat(np.ascontiguousarray(image_chw)))
    ret, out = ex.extract("output")
    if ret != 0:
        raise RuntimeError(f"ncnn extract failed ({ret})")
    return np.array(out)


def run_onnx(path, image_chw):
    # No usage telemetry to Microsoft (ONNX Runtime 1.29+ sends it on Linux).
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(["output"], {"input": image_chw[None]})[0][0]


def compare(reference, candidate):
    if reference.shape != candidate.shape:
        raise AssertionError(f"shape {candidate.shape} != ncnn's {reference.shape}")
    err = np.abs(reference.astype(np.float64) - candidate.astype(np.float64))
    mse = float(np.mean(err**2))
    psnr = float("inf") if mse == 0 else 10 * np.log10(1.0 / mse)
    return float(err.max()), psnr


def test_image(height, width, seed=0):
    """Blocky random content with noise: edges and texture, like a picture, reproducibly."""
    rng = np.random.default_rng(seed)
    coarse = rng.random((3, height // 4 + 1, width // 4 + 1), dtype=np.float32)
    image = np.repeat(np.repeat(coarse, 4, axis=1), 4, axis=2)[:, :height, :width]
    noise = 0.05 * rng.standard_normal(image.shape, dtype=np.float32)
    return np.ascontiguousarray(np.clip(image + noise, 0, 1), dtype=np.float32)


def check_all(package_dir, onnx_dir, size=32, seed=0, height=None):
    """Yield (name, shape, max_abs_err, psnr) for every known model."""
    image = test_image(height or size, size, seed)
    for stem, name in KNOWN_MODELS.items():
        src = Path(package_dir) / stem
        ref = run_ncnn(f"{src}.param", f"{src}.bin", image)
        got = run_onnx(Path(onnx_dir) / f"{name}.onnx", image)
        yield (name, got.shape) + compare(ref, got)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package-dir", required=True)
    ap.add_argument("--onnx-dir", required=True)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--min-psnr", type=float, default=50.0)
    args = ap.parse_args(argv)
    worst = float("inf")
    for name, shape, max_err, psnr in check_all(args.package_dir, args.onnx_dir, args.size):
        print(f"{name:28s} out {tuple(shape)}  max_abs_err {max_err:.3e}  psnr {psnr:.1f} dB")
        worst = min(worst, psnr)
    if worst < args.min_psnr:
        print(f"FAIL: worst PSNR {worst:.1f} dB < {args.min_psnr} dB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
