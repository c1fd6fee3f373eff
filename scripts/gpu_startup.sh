#!/usr/bin/env bash
# Start-up and null-encoder checks on the GPU machine, after scripts/gpu_tests.sh staged
# /opt/rave-dev: time to the first frame of fresh one-frame runs (the report's first_frame_s
# and start-up steps, `rave -v`'s log of the colour kernels and the first preprocess), and
# `rave benchmark` (inference alone against the null-encoder pipeline) of 300 frames of 1080p
# photographs with the native engine, with CUDA's lazy module loading (the default) and with
# CUDA_MODULE_LOADING=EAGER. Logs and JSON go to $OUT (or ./gpu-results); a summary is printed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
bash "$root/scripts/make_sample_clip.sh" "$work/one.mp4" 1920 1080 1 >/dev/null 2>&1 || status=1
bash "$root/scripts/make_sample_clip.sh" "$work/hd.mp4" 1920 1080 300 >/dev/null 2>&1 || status=1
first() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("first_frame_s", r.get("first_frame_s"), "elapsed_s", r.get("elapsed_s"), "steps", [(s["name"], round(s["seconds"], 3)) for s in r.get("startup", [])])' "$1" 2>/dev/null || echo "?"; }
for b in native cuda; do
  for i in 1 2 3; do
    start=$(date +%s.%N)
    rave -v upscale -i "$work/one.mp4" -o "$work/one-$b.mp4" --device gpu --backend "$b" --overwrite --json >"$out/one_${b}_$i.json" 2>"$out/one_${b}_$i.log" || status=1
    echo "$b run $i: process $(awk "BEGIN{print $(date +%s.%N) - $start}") s; $(first "$out/one_${b}_$i.json")" | tee -a "$out/startup.txt"
  done
  grep -h "first frame:\|colour kernels" "$out/one_${b}_3.log" | tee -a "$out/startup.txt"
done
for loading in LAZY EAGER; do
  CUDA_MODULE_LOADING=$loading rave -v benchmark -i "$work/hd.mp4" --device gpu --backend native --json >"$out/benchmark_$loading.json" 2>"$out/benchmark_$loading.log" || status=1
  python3 - "$out/benchmark_$loading.json" "$loading" <<'PY' | tee -a "$out/startup.txt"
import json, sys
r = json.load(open(sys.argv[1]))
n = r["null_encode"]
print(f"CUDA_MODULE_LOADING={sys.argv[2]}: inference alone {r['inference_only']['fps']:.1f} fps; null encode {n['fps']:.1f} fps ({r['null_vs_inference']:.3f} of inference) over {n['frames']} frames in {n['elapsed_s']:.3f} s")
for s in n["stages"]:
    print(f"  {s['name']:<12} avg {s['avg_ms']:7.2f} ms  peak {s['peak_ms']:7.1f} ms  capacity {s['capacity_fps']:8.1f} fps")
PY
  grep -h "first frame:\|colour kernels" "$out/benchmark_$loading.log" | head -4 | tee -a "$out/startup.txt"
done
exit $status
