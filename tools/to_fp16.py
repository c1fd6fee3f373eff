#!/usr/bin/env python3
"""Make an FP16 variant of an ONNX model for GPU inference: weights, arithmetic and, by
default, the image input and output in half precision, so RAVE's preprocess kernel feeds it
half-precision RGB directly (no float32 tensor, no Cast node at either end).

Usage: to_fp16.py [--keep-io-types] IN.onnx OUT.onnx
  --keep-io-types   keep float32 input and output (Cast nodes at the ends)
Needs the onnxconverter-common package (installed by scripts/setup.sh).
"""
import sys

import onnx
from onnxconverter_common import float16


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = {a for a in argv[1:] if a.startswith("--")}
    if len(args) != 2 or flags - {"--keep-io-types"}:
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(args[0])
    half = float16.convert_float_to_float16(model, keep_io_types="--keep-io-types" in flags)
    onnx.checker.check_model(half)
    onnx.save(half, args[1])
    print(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
