#!/usr/bin/env bash
# RAVE's native engine through the whole pipeline, on the GPU machine after
# scripts/gpu_tests.sh staged it (/opt/rave-dev): the same clips upscaled with
# `--backend native`, `--backend cuda` (ONNX Runtime) and on the CPU must agree (PSNR) with
# the same frames, timestamps and streams, and the default (auto) must pick the native
# engine; then `rave benchmark` of a 1920x1080 real-content clip (photographs,
# scripts/make_sample_clip.sh) with each engine: inference alone, null encode, full pipeline
# (libx264 veryfast), and the wall time from start to the first frame out. Logs and JSON go
# to $OUT (or ./gpu-results); a summary is printed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
frames="${RAVE_NATIVE_FRAMES:-300}"

say "clips"
small_clips
bash "$root/scripts/make_sample_clip.sh" "$work/photos_small.mp4" 334 188 50 || status=1
bash "$root/scripts/make_sample_clip.sh" "$work/hd.mp4" 1920 1080 "$frames" || status=1
bash "$root/scripts/make_sample_clip.sh" "$work/photos_hd.mp4" 1920 1080 10 || status=1

# Average PSNR and that of the worst frame (a frame corrupted by a race between the GPU
# stages would show there, not in the average).
psnr() {
  local avg worst
  avg=$(ffmpeg -v info -i "$1" -i "$2" -lavfi "[0:v][1:v]psnr=stats_file=$work/psnr.log" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
  worst=$(grep -oE 'psnr_avg:[0-9.inf]+' "$work/psnr.log" | cut -d: -f2 | sort -g | head -1)
  echo "${avg:-?} (worst frame ${worst:-?})"
}
count() { ffprobe -v error -select_streams "$2" -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
ts() { ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "$1" | sort -n | md5sum | cut -c1-12; }
amd5() { ffmpeg -v error -i "$1" -map 0:a -c copy -f md5 - 2>/dev/null; }
engine() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["backend"]["name"], "|", r["backend"]["reason"])' "$1" 2>/dev/null || echo "?"; }

for clip in small.mkv photos_small.mp4 photos_hd.mp4; do
  say "$clip: native, ONNX Runtime CUDA, CPU, and the default"
  for b in native cuda; do
    rave upscale -i "$work/$clip" -o "$work/$b-$clip" --device gpu --backend "$b" --json >"$work/upscale_${b}_$clip.json" 2>"$work/upscale_${b}_$clip.err" || { status=1; tail -3 "$work/upscale_${b}_$clip.err"; }
  done
  rave upscale -i "$work/$clip" -o "$work/cpu-$clip" --device cpu --json >"$work/upscale_cpu_$clip.json" 2>"$work/upscale_cpu_$clip.err" || { status=1; tail -3 "$work/upscale_cpu_$clip.err"; }
  rave upscale -i "$work/$clip" -o "$work/auto-$clip" --json >"$work/upscale_auto_$clip.json" 2>"$work/upscale_auto_$clip.err" || { status=1; tail -3 "$work/upscale_auto_$clip.err"; }
  {
    echo "engine native: $(engine "$work/upscale_native_$clip.json")"
    echo "engine default: $(engine "$work/upscale_auto_$clip.json")"
    echo "PSNR native vs ONNX Runtime CUDA: $(psnr "$work/native-$clip" "$work/cuda-$clip") dB; native vs CPU: $(psnr "$work/native-$clip" "$work/cpu-$clip") dB; CUDA vs CPU: $(psnr "$work/cuda-$clip" "$work/cpu-$clip") dB"
    echo "video frames: in $(count "$work/$clip" v:0), native $(count "$work/native-$clip" v:0), cuda $(count "$work/cuda-$clip" v:0), cpu $(count "$work/cpu-$clip" v:0)"
    echo "video timestamps digest: in $(ts "$work/$clip"), native $(ts "$work/native-$clip"), cpu $(ts "$work/cpu-$clip")"
    echo "audio md5: in $(amd5 "$work/$clip"), native $(amd5 "$work/native-$clip")"
  } | tee -a "$out/compare.txt"
done

for b in native cuda; do
  say "rave benchmark --backend $b, 1920x1080 photographs, $frames frames, libx264 veryfast"
  start=$(date +%s.%N)
  rave benchmark -i "$work/hd.mp4" --device gpu --backend "$b" --json >"$out/benchmark_$b.json" 2>"$work/benchmark_$b.err" || { status=1; tail -3 "$work/benchmark_$b.err"; }
  echo "$b: benchmark wall $(awk "BEGIN{print $(date +%s.%N) - $start}") s" >>"$out/walls.txt"
  python3 - "$out/benchmark_$b.json" <<'PY' | tee "$out/benchmark_$b.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"backend: {r['backend']} ({r['backend_reason']})")
print(f"inference alone {r['inference_only']['fps']:.1f} fps; null encode {r['null_encode']['fps']:.1f} fps ({r['null_vs_inference']:.2f} of inference); full {r['full']['fps']:.1f} fps ({r['full_vs_bound']:.2f} of min(inference, encoder))")
for s in r["full"]["stages"]:
    print(f"  {s['name']:<12} capacity {s['capacity_fps']:8.1f} fps  avg {s['avg_ms']:7.2f} ms")
g = r["full_report"].get("gpu") or {}
print("host copies:", g.get("host_copies"), "VRAM peak MiB:", (g.get("health") or {}).get("vram_peak", 0) / 2**20)
PY
done

say "time to the first frame: a 1-frame upscale per engine (warm machine)"
for b in native cuda; do
  bash "$root/scripts/make_sample_clip.sh" "$work/one.mp4" 1920 1080 1 >/dev/null 2>&1
  start=$(date +%s.%N)
  rave upscale -i "$work/one.mp4" -o "$work/one-$b.mp4" --device gpu --backend "$b" --overwrite >/dev/null 2>"$work/one_$b.err" || status=1
  echo "$b: whole 1-frame 1080p run $(awk "BEGIN{print $(date +%s.%N) - $start}") s" | tee -a "$out/walls.txt"
done
exit $status
