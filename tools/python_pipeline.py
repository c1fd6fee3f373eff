#!/usr/bin/env python3
"""The pipeline people glue together today, for comparison with RAVE on the same GPU:
FFmpeg decodes on the CPU into a pipe of RGB frames, PyTorch runs the model in FP16 on the
GPU (the graph of tools/torch_sr_bench.py, channels_last, cudnn.benchmark), and FFmpeg
encodes the frames it reads from a second pipe with libx264. Audio is not carried.

Usage: python_pipeline.py SPEC.npz IN OUT.mp4 [--frames N] [--preset P] [--crf C]
Prints the frames per second over the whole run (first frame read to file closed).
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_sr_bench import build  # noqa: E402


def probe(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
         "stream=width,height,r_frame_rate", "-of", "json", path],
        check=True, capture_output=True, text=True).stdout
    s = json.loads(out)["streams"][0]
    return s["width"], s["height"], s["r_frame_rate"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--frames", type=int, default=0)
    ap.add_argument("--preset", default="veryfast")
    ap.add_argument("--crf", default="18")
    a = ap.parse_args(argv)
    import torch

    torch.backends.cudnn.benchmark = True
    w, h, rate = probe(a.input)
    run = build(a.spec, torch.device("cuda"), torch.float16)
    limit = ["-frames:v", str(a.frames)] if a.frames else []
    dec = subprocess.Popen(["ffmpeg", "-v", "error", "-i", a.input, *limit, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                           stdout=subprocess.PIPE)
    enc = None
    frames = 0
    started = time.perf_counter()
    with torch.inference_mode():
        while True:
            buf = dec.stdout.read(w * h * 3)
            if len(buf) < w * h * 3:
                break
            x = torch.frombuffer(bytearray(buf), dtype=torch.uint8).cuda().view(h, w, 3)
            x = x.permute(2, 0, 1).unsqueeze(0).half().div_(255).contiguous(memory_format=torch.channels_last)
            y = run(x).clamp_(0, 1).mul_(255).round_().to(torch.uint8)[0].permute(1, 2, 0).contiguous().cpu()
            if enc is None:
                oh, ow = y.shape[0], y.shape[1]
                enc = subprocess.Popen(
                    ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{ow}x{oh}",
                     "-r", rate, "-i", "-", "-c:v", "libx264", "-preset", a.preset, "-crf", a.crf,
                     "-pix_fmt", "yuv420p", a.output], stdin=subprocess.PIPE)
            enc.stdin.write(y.numpy().tobytes())
            frames += 1
    if enc is not None:
        enc.stdin.close()
        enc.wait()
    dec.wait()
    elapsed = time.perf_counter() - started
    fps = frames / elapsed if elapsed > 0 else 0.0
    print(f"python pipeline (ffmpeg decode | torch fp16 | ffmpeg libx264 {a.preset}): {frames} frames in {elapsed:.1f} s, {fps:.2f} fps")
    print(json.dumps({"python_pipeline": {"frames": frames, "seconds": elapsed, "fps": fps}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
