#!/usr/bin/env bash
# RAVE's native engine against its peers in one run, on the GPU machine after
# scripts/gpu_tests.sh staged it (/opt/rave-dev): for SRVGGNetCompact x2 at 1920x1080 and
# RRDBNet x4 (realesrgan-x4plus) at 960x540, batch 1, FP16:
#   - the native engine alone (the rave-native GPU test binaries' speed tests, with the
#     per-layer times of RRDBNet);
#   - PyTorch on the same graph (tools/torch_sr_bench.py): eager channels_last and
#     torch.compile(mode="max-autotune"), after checking its interpreter against
#     onnxruntime;
#   - `rave benchmark` with --backend native and --backend cuda (ONNX Runtime's CUDA
#     provider): inference alone, null encode, full pipeline;
#   - pipeline: a real-content clip upscaled by realesrgan-x4plus with each engine, the
#     outputs compared (PSNR) and their frames counted.
# Usage: gpu_peers.sh [native|torch-compact|torch-rrdb|benchmark|pipeline]... (default: all, in
# that order; one section per call keeps each within the device's 10-minute command limit:
# torch.compile of RRDBNet's 350 convolutions takes minutes). The summary is printed and
# appended to $OUT/peers.txt (or ./gpu-results); the logs and JSON of each call go into one
# $OUT/peers_logs_<sections>.tar.gz (the device returns only a few files a call).
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
logs="$work/logs"; mkdir -p "$logs"
pack() { tar czf "$out/peers_logs_${sections// /_}.tar.gz" -C "$work" logs 2>/dev/null; rm -rf "$work"; }
trap pack EXIT
py="${RAVE_TORCH_PYTHON:-python3}"
tool="$root/tools/torch_sr_bench.py"
say() { echo "== $*" | tee -a "$out/peers.txt"; }

sections="${*:-native torch-compact torch-rrdb benchmark pipeline}"
has() { [[ " $sections " == *" $1 "* ]]; }
torch_ok() { "$py" -c "import torch" 2>/dev/null || { say "no PyTorch here ($py): peers not measured"; status=1; return 1; }; }

if has native; then
  say "native engine alone"
  "$bin/test_gpu_network" --ignored --nocapture gpu_network_speed_at_1080p >"$logs/native_compact.log" 2>&1 || status=1
  "$bin/test_gpu_rrdb" --ignored --nocapture gpu_rrdb_speed_at_960x540 >"$logs/native_rrdb.log" 2>&1 || status=1
  grep -hE "fps|layer|summed|first frame" "$logs/native_compact.log" "$logs/native_rrdb.log" | tee -a "$out/peers.txt"
fi

if has torch-compact && torch_ok; then
  say "PyTorch, SRVGGNetCompact x2 (the folded graph the native engine runs), 1920x1080"
  "$py" "$tool" check "$bin/animevideov3-x2-folded.npz" "$bin/models/realesr-animevideov3-x2.onnx" 2>&1 | tail -1 | tee -a "$out/peers.txt"
  timeout 500 "$py" "$tool" bench "$bin/animevideov3-x2-folded.npz" 1920 1080 100 --compile >"$logs/torch_compact.log" 2>&1 || status=1
  grep -E "^torch" "$logs/torch_compact.log" | tee -a "$out/peers.txt"
fi

if has torch-rrdb && torch_ok; then
  say "PyTorch, RRDBNet x4 (realesrgan-x4plus, fp16 weights), 960x540"
  "$py" "$tool" check "$bin/x4plus.npz" "$bin/models/realesrgan-x4plus-fp16.onnx" 2>&1 | tail -1 | tee -a "$out/peers.txt"
  timeout 560 "$py" "$tool" bench "$bin/x4plus.npz" 960 540 20 --compile >"$logs/torch_rrdb.log" 2>&1 || status=1
  grep -E "^torch" "$logs/torch_rrdb.log" | tee -a "$out/peers.txt"
fi

if has benchmark; then
  bash "$root/scripts/make_sample_clip.sh" "$work/hd.mp4" 1920 1080 100 >/dev/null 2>&1 || status=1
  bash "$root/scripts/make_sample_clip.sh" "$work/qhd.mp4" 960 540 30 >/dev/null 2>&1 || status=1
  for case in "compact hd.mp4 realesr-animevideov3-x2" "rrdb qhd.mp4 realesrgan-x4plus-fp16"; do
    read -r name clip model <<<"$case"
    for b in native cuda; do
      say "rave benchmark $model on $clip, --backend $b"
      rave benchmark -i "$work/$clip" -m "$model" --device gpu --backend "$b" --json >"$logs/benchmark_${name}_$b.json" 2>"$logs/benchmark_${name}_$b.err" \
        || { status=1; tail -3 "$logs/benchmark_${name}_$b.err"; continue; }
      python3 - "$logs/benchmark_${name}_$b.json" <<'PY' | tee -a "$out/peers.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  {r['backend']}: inference alone {r['inference_only']['fps']:.2f} fps; null encode {r['null_encode']['fps']:.2f} fps ({r['null_vs_inference']:.2f} of inference); full (libx264 veryfast) {r['full']['fps']:.2f} fps")
PY
    done
  done
fi
if has pipeline; then
  say "rave upscale realesrgan-x4plus-fp16, 334x188 photographs, native against ONNX Runtime CUDA"
  bash "$root/scripts/make_sample_clip.sh" "$work/small.mp4" 334 188 12 >/dev/null 2>&1 || status=1
  for b in native cuda; do
    rave upscale -i "$work/small.mp4" -o "$work/x4-$b.mp4" -m realesrgan-x4plus-fp16 --device gpu --backend "$b" --json >"$logs/upscale_x4_$b.json" 2>"$logs/upscale_x4_$b.err" || { status=1; tail -3 "$logs/upscale_x4_$b.err"; }
  done
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  engine:", r["backend"]["name"], "|", r["backend"]["reason"])' "$logs/upscale_x4_native.json" 2>&1 | tee -a "$out/peers.txt"
  p=$(ffmpeg -v info -i "$work/x4-native.mp4" -i "$work/x4-cuda.mp4" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
  n=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$work/x4-native.mp4")
  c=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$work/x4-cuda.mp4")
  echo "  PSNR native vs ONNX Runtime CUDA: $p dB; frames native $n, cuda $c (in 12)" | tee -a "$out/peers.txt"
fi
exit $status
