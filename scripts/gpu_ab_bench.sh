#!/usr/bin/env bash
# `rave benchmark` of two binaries on one warm machine, alternately (A B A B ...), on the
# 1920x1080 clip of scripts/gpu_e2e.sh: whether a change moved the pipeline's speed or the
# host did. On the GPU machine after scripts/gpu_tests.sh staged /opt/rave-dev (binary A);
# binary B is a path given (carried zstd-compressed and unpacked by the caller), copied
# beside A into /opt/rave-dev/payload first: a binary elsewhere does not find the runtime
# libraries staged beside it, and its benchmark fails.
# Usage: scripts/gpu_ab_bench.sh OTHER_RAVE [ROUNDS]; results go to $OUT (or ./gpu-results).
set -uo pipefail
source /opt/rave-dev/env.sh
export PATH="/opt/rave-dev/payload:$PATH"
other="${1:?usage: $0 OTHER_RAVE [ROUNDS]}"; rounds="${2:-2}"
out="${OUT:-$(pwd)/gpu-results}"; mkdir -p "$out"
w="$(mktemp -d)"; trap 'rm -rf "$w"' EXIT
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v 300 -c:v libx264 -preset veryfast \
  -crf 20 -pix_fmt yuv420p "$w/hd.mp4"
for r in $(seq "$rounds"); do
  for bin in "$(command -v rave)" "$other"; do
    "$bin" benchmark -i "$w/hd.mp4" --device gpu --frames 300 --json > "$w/b.json" 2>/dev/null
    python3 - "$w/b.json" "$bin" "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
st = {s["name"]: s["capacity_fps"] for s in r["full"]["stages"]}
print(f"round {sys.argv[3]} {sys.argv[2]}: inference {r['inference_only']['fps']:.1f}, null {r['null_encode']['fps']:.1f}, full {r['full']['fps']:.1f} fps; stages decode {st['decode']:.0f} postprocess {st['postprocess']:.1f} encode {st['encode']:.1f}")
PY
  done
done | tee "$out/ab_bench.txt"
