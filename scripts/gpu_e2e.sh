#!/usr/bin/env bash
# The GPU pipeline end to end, on the GPU machine after scripts/gpu_tests.sh staged it
# (/opt/rave-dev): the same small clip (video + audio + subtitles) upscaled on the GPU and on
# the CPU must match (PSNR >= 40 dB) with the same frames, timestamps and streams; then
# a model of a side multiple padded on the device (the plain model's output, to the byte);
# `rave benchmark` on a 1920x1080 H.264 clip (inference alone, null encode, full pipeline),
# and the Python pipeline (FFmpeg pipes + PyTorch FP16) on the same clip.
# RAVE_E2E_QUICK=1 stops after the benchmark (no VRAM and Python comparisons).
# Logs and JSON go to $OUT (or ./gpu-results); a summary is printed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
frames="${RAVE_E2E_FRAMES:-600}"

say "clips"
small_clips
ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$frames" -c:v libx264 -preset veryfast \
  -crf 20 -pix_fmt yuv420p "$work/hd.mp4" || status=1

say "small clip on the GPU and on the CPU"
rave upscale -i "$work/small.mkv" -o "$work/gpu.mkv" --device gpu --json >"$out/e2e_gpu.json" 2>"$out/e2e_gpu.err" || { status=1; cat "$out/e2e_gpu.err"; }
rave upscale -i "$work/small.mkv" -o "$work/cpu.mkv" --device cpu --json >"$out/e2e_cpu.json" 2>"$out/e2e_cpu.err" || { status=1; cat "$out/e2e_cpu.err"; }
psnr=$(ffmpeg -v info -i "$work/gpu.mkv" -i "$work/cpu.mkv" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
count() { ffprobe -v error -select_streams "$2" -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
ts() { ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$1" | sort -n | md5sum | cut -c1-12; }
amd5() { ffmpeg -v error -i "$1" -map 0:a -c copy -f md5 - 2>/dev/null; }
{
  echo "PSNR GPU vs CPU output: ${psnr:-?} dB (need >= 40)"
  echo "video frames: in $(count "$work/small.mkv" v:0), gpu $(count "$work/gpu.mkv" v:0), cpu $(count "$work/cpu.mkv" v:0)"
  echo "video timestamps digest: in $(ts "$work/small.mkv"), gpu $(ts "$work/gpu.mkv"), cpu $(ts "$work/cpu.mkv")"
  echo "audio packets: in $(count "$work/small.mkv" a:0), gpu $(count "$work/gpu.mkv" a:0); audio md5 in $(amd5 "$work/small.mkv") gpu $(amd5 "$work/gpu.mkv")"
  echo "subtitle packets: in $(count "$work/small.mkv" s:0), gpu $(count "$work/gpu.mkv" s:0)"
} | tee "$out/e2e_compare.txt"
python3 - "$out/e2e_gpu.json" <<'PY' | tee -a "$out/e2e_compare.txt"
import json, sys
r = json.load(open(sys.argv[1]))
g = r.get("gpu") or {}
print("backend:", r["backend"]["name"], "-", r["backend"]["reason"])
print("decoder:", g.get("decoder"))
print("host copies:", g.get("host_copies"), "audit mismatches:", g.get("backend", {}).get("audit_mismatches"))
print("pool hit rate:", g.get("health", {}).get("pool_hit_rate"), "VRAM peak MiB:", g.get("health", {}).get("vram_peak", 0) / 2**20)
PY
awk -v p="${psnr:-0}" 'BEGIN { exit !(p == "inf" || p + 0 >= 40) }' || { echo "FAIL: PSNR"; status=1; }

say "AV1 (NVDEC on the H200 has none): the GPU path falls back to software decode"
ffmpeg -v error -f lavfi -i "testsrc2=size=320x180:rate=24" -t 1 -c:v libsvtav1 -pix_fmt yuv420p "$work/av1.mkv" || status=1
rave upscale -i "$work/av1.mkv" -o "$work/av1_gpu.mkv" --device gpu --json >"$work/av1_gpu.json" 2>/dev/null || status=1
rave upscale -i "$work/av1.mkv" -o "$work/av1_cpu.mkv" --device cpu --json >/dev/null 2>&1 || status=1
av1_psnr=$(ffmpeg -v info -i "$work/av1_gpu.mkv" -i "$work/av1_cpu.mkv" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpu"]; print("AV1 decoder:", g["decoder"]); print("AV1 host copies:", g["host_copies"])' "$work/av1_gpu.json" | tee "$out/av1.txt"
echo "AV1 PSNR GPU vs CPU: ${av1_psnr:-?} dB" | tee -a "$out/av1.txt"

say "a model of side multiple 4 on a 1366x766 clip: the frame padded on the device, the plain model's output"
ffmpeg -v error -f lavfi -i "testsrc2=size=1366x766:rate=25" -t 1 -c:v libx264 -pix_fmt yuv420p "$work/odd.mp4" || status=1
fx="$root/tests/fixtures"
for m in nearest_x2 blocks4_x2; do
  rave upscale -i "$work/odd.mp4" -o "$work/odd_$m.mkv" -m "$fx/$m.onnx" --device gpu --crf 0 --json \
    >"$work/odd_$m.json" 2>"$out/odd_$m.err" || { status=1; cat "$out/odd_$m.err"; }
done
rave upscale -i "$work/odd.mp4" -o "$work/odd_tiled.mkv" -m "$fx/blocks4_x2.onnx" --device gpu --crf 0 --tile 500x300 \
  --json >"$work/odd_tiled.json" 2>"$out/odd_tiled.err" || { status=1; cat "$out/odd_tiled.err"; }
decoded() { ffmpeg -v error -i "$1" -f rawvideo - | md5sum | cut -c1-12; }
tiled_psnr=$(ffmpeg -v info -i "$work/odd_tiled.mkv" -i "$work/odd_nearest_x2.mkv" -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
{
  echo "decoded: nearest_x2 $(decoded "$work/odd_nearest_x2.mkv"), blocks4_x2 padded $(decoded "$work/odd_blocks4_x2.mkv") (must be equal)"
  echo "blocks4_x2 on tiles of 500x300 vs nearest_x2 whole: ${tiled_psnr:-?} dB"
  python3 -c 'import json,sys
for p in sys.argv[1:]:
    r = json.load(open(p)); print(r["backend"]["name"], "|", r["tiling"]["reason"], "|", r["tiling"].get("tile"), r["tiling"].get("grid"))' \
    "$work/odd_blocks4_x2.json" "$work/odd_tiled.json"
} | tee "$out/block_model.txt"
[[ "$(decoded "$work/odd_nearest_x2.mkv")" == "$(decoded "$work/odd_blocks4_x2.mkv")" ]] || { echo "FAIL: padded block model"; status=1; }

say "--decoder software on the small clip (one upload per frame)"
rave upscale -i "$work/small.mkv" -o "$work/gpu_sw.mkv" --device gpu --decoder software --json >"$work/sw.json" 2>/dev/null || status=1
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpu"]; print("software decoder:", g["decoder"], g["host_copies"])' "$work/sw.json" | tee "$out/software_decoder.txt"

say "Ctrl+C on the GPU path: exit 130 and a finalized .partial file"
# Job control on for the launch: a script's background job otherwise starts with SIGINT
# ignored, and RAVE keeps a SIGINT ignored at its start ignored (as nohup asks).
set -m
rave upscale -i "$work/hd.mp4" -o "$work/cut.mp4" --device gpu --progress off >/dev/null 2>"$work/cut.err" &
pid=$!
set +m
sleep "${RAVE_CUT_AFTER_S:-6}"
kill -INT "$pid"
wait "$pid"; rc=$?
partial="$work/cut.partial.mp4"
cut_frames=$( [[ -f "$partial" ]] && count "$partial" v:0 || echo 0)
echo "exit code $rc (want 130); partial file frames: $cut_frames; target exists: $([[ -e "$work/cut.mp4" ]] && echo yes || echo no)" | tee "$out/cancel.txt"
[[ $rc == 130 && $cut_frames -gt 0 && ! -e "$work/cut.mp4" ]] || { echo "FAIL: cancellation"; status=1; }

say "rave benchmark, 1920x1080 H.264, $frames frames, FP16 (default), libx264 veryfast"
rave benchmark -i "$work/hd.mp4" --device gpu --frames "$frames" --json >"$out/benchmark_gpu.json" 2>"$out/benchmark_gpu.err" || { status=1; tail -3 "$out/benchmark_gpu.err"; }
python3 - "$out/benchmark_gpu.json" <<'PY' | tee "$out/benchmark_gpu.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"inference alone {r['inference_only']['fps']:.1f} fps; null encode {r['null_encode']['fps']:.1f} fps ({r['null_vs_inference']:.2f} of inference); full {r['full']['fps']:.1f} fps ({r['full_vs_bound']:.2f} of min(inference, encoder))")
for s in r["full"]["stages"]:
    print(f"  {s['name']:<12} capacity {s['capacity_fps']:8.1f} fps  avg {s['avg_ms']:7.2f} ms  peak {s['peak_ms']:7.2f} ms")
for s in r["null_encode"]["stages"]:
    print(f"  null-run {s['name']:<12} capacity {s['capacity_fps']:8.1f} fps")
g = r["full_report"].get("gpu") or {}
print("backend:", r["backend_reason"])
print("decoder:", g.get("decoder"))
print("host copies:", g.get("host_copies"), "pool hit rate:", g.get("health", {}).get("pool_hit_rate"), "VRAM peak MiB:", g.get("health", {}).get("vram_peak", 0) / 2**20)
PY

if [[ -n "${RAVE_E2E_QUICK:-}" ]]; then exit $status; fi

say "VRAM: 300 vs 3000 frames (640x360 clip, null encode and full pipeline)"
ffmpeg -v error -f lavfi -i "testsrc2=size=640x360:rate=30" -frames:v 3000 -c:v libx264 -preset ultrafast \
  -crf 23 -pix_fmt yuv420p "$work/long.mp4" || status=1
for n in 300 3000; do
  rave benchmark -i "$work/long.mp4" --device gpu --frames "$n" --json >"$work/vram_$n.json" 2>/dev/null || status=1
done
python3 - "$work/vram_300.json" "$work/vram_3000.json" <<'PY' | tee "$out/vram.txt"
import json, sys
peaks = []
for path in sys.argv[1:]:
    r = json.load(open(path))
    h = r["full_report"]["gpu"]["health"]
    peaks.append(h["vram_peak"])
    print(f"{r['frames']} frames: VRAM peak {h['vram_peak'] / 2**20:.1f} MiB, pool hit rate {100 * h['pool_hit_rate']:.2f}%, full {r['full']['fps']:.1f} fps, null {r['null_encode']['fps']:.1f} fps, inference {r['inference_only']['fps']:.1f} fps")
print(f"peak(3000) / peak(300) = {peaks[1] / peaks[0]:.3f} (goal <= 1.05)")
PY

if python3 -c "import torch" 2>/dev/null; then
  say "Python pipeline (ffmpeg decode | torch FP16 | ffmpeg libx264 veryfast), same clip"
  python3 "$bin/python_pipeline.py" "$bin/animevideov3-x2.npz" "$work/hd.mp4" "$work/py.mp4" --frames "$frames" \
    2>&1 | tee "$out/python_pipeline.txt" || status=1
fi
exit $status
