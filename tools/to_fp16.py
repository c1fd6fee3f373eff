#!/usr/bin/env python3
"""Make an FP16 variant of an ONNX model for GPU inference: weights and arithmetic in half
precision, inputs and outputs kept float32 (so the same RGB F32 tensors feed it).

Usage: to_fp16.py IN.onnx OUT.onnx    (needs the onnxconverter-common package)
"""
import sys

import onnx
from onnxconverter_common import float16


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(argv[1])
    half = float16.convert_float_to_float16(model, keep_io_types=True)
    onnx.checker.check_model(half)
    onnx.save(half, argv[2])
    print(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
