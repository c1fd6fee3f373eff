#!/usr/bin/env bash
# Segments on the GPU machine, after scripts/gpu_tests.sh staged /opt/rave-dev: a 1920x1080 clip
# of real photographs (scripts/make_sample_clip.sh, a keyframe every 2 s, with sound) upscaled
# x2 to 3840x2160 with libx264.
#
#   gpu_segments.sh sweep    --jobs 1, 2 and 4 at veryfast and medium (6 segments of 100 frames), one
#                            segment against six at veryfast, and a SIGKILL halfway through a
#                            medium run followed by the same command (resume): the resumed file
#                            must decode to the same frames (framemd5) as an uninterrupted run.
#   gpu_segments.sh compare  `rave benchmark` with one segment and with 12 (null encoder: what
#                            segmenting costs), and the Python pipeline (FFmpeg pipes + PyTorch
#                            FP16 + libx264) at veryfast and medium on the same clip.
#
# RAVE_SEG_FRAMES (default 600) sets the clip length, RAVE_SEG_SIZE ("1920 1080") its size. Logs, JSON and a summary go to $OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-results}"; mkdir -p "$out"
bin="${RAVE_SEG_BIN:-/opt/rave-dev/payload}"
device="${RAVE_SEG_DEVICE:-gpu}"   # cpu: a dry run of the script here (with a small RAVE_SEG_SIZE)
read -r width height <<<"${RAVE_SEG_SIZE:-1920 1080}"
export PATH="$bin:$PATH"
frames="${RAVE_SEG_FRAMES:-600}"
work="${RAVE_SEG_WORK:-/tmp/rave-seg}"; mkdir -p "$work"
clip="$work/real${height}.mp4"
status=0
say() { echo "== $*"; }
summary="$out/segments_${1:-sweep}.txt"

# make_sample_clip.sh finds the photos in $RAVE_HOME/photos (staged into the payload).
[[ -s $clip ]] || RAVE_HOME="$bin" bash "$root/scripts/make_sample_clip.sh" "$clip" "$width" "$height" "$frames" 50 >/dev/null || exit 1

# run NAME ARGS...: one `rave upscale` into $work/NAME.mp4 with its JSON report kept.
run() {
  local name="$1"; shift
  rave upscale -i "$clip" -o "$work/$name.mp4" --overwrite --device "$device" --progress off --json "$@" \
    >"$out/$name.json" 2>"$out/$name.err" || { status=1; echo "FAIL: $name"; tail -3 "$out/$name.err"; }
  python3 - "$out/$name.json" "$name" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1])); s = r["segments"]
print(f"{sys.argv[2]:<22} {r['frames_out']:>5} frames  {r['fps']:6.2f} fps wall ({r['elapsed_s']:6.2f} s)  "
      f"{r['pipeline_fps']:6.2f} fps stages  segments {s['total']} (processed {s['processed']}, reused {s['reused']}) jobs {s['jobs']}")
PY
}

sweep() {
  {
    echo "date: $(date -u +%FT%TZ)  commit: ${RAVE_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
    ffprobe -v error -show_entries stream=codec_name,width,height,nb_frames -of csv=p=0 "$clip"
  } | tee "$summary"
  for preset in veryfast medium; do
    say "libx264 $preset, 6 segments of 100 frames, --jobs 1, 2, 4"
    for j in 1 2 4; do run "${preset}_j$j" --preset "$preset" --segment-frames 100 --jobs "$j"; done
  done
  say "one segment against six (veryfast, --jobs 1)"
  run veryfast_one --preset veryfast --segment-frames 1000000 --jobs 1

  say "SIGKILL halfway through a medium run (--jobs 2), then the same command again"
  local half; half=$(python3 -c 'import json,sys; print(max(2, json.load(open(sys.argv[1]))["elapsed_s"] / 2))' "$out/medium_j2.json")
  rave upscale -i "$clip" -o "$work/killed.mp4" --overwrite --device "$device" --progress off --preset medium \
    --segment-frames 100 --jobs 2 >/dev/null 2>"$out/killed_first.err" &
  local pid=$!
  sleep "$half"; kill -KILL "$pid"; wait "$pid" 2>/dev/null
  {
    echo "killed after ${half} s; work folder: $(ls "$work/.killed.mp4.rave-work" 2>/dev/null | tr '\n' ' ')"
    echo "target exists after the kill: $([[ -e $work/killed.mp4 ]] && echo yes || echo no)"
  } | tee -a "$summary"
  rave upscale -i "$clip" -o "$work/killed.mp4" --device "$device" --progress off --preset medium \
    --segment-frames 100 --jobs 2 --json >"$out/resumed.json" 2>"$out/resumed.err" || { status=1; tail -3 "$out/resumed.err"; }
  python3 - "$out/resumed.json" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1])); s = r["segments"]
print(f"resumed: status {r['status']}, {r['frames_out']} frames, segments {s['total']}: reused {s['reused']}, processed {s['processed']}")
PY
  md5() { ffmpeg -v error -i "$1" -map 0:v -f framemd5 - | grep -v '^#' | cut -d, -f2,3,6 | md5sum | cut -c1-16; }
  amd5() { ffmpeg -v error -i "$1" -map 0:a -c copy -f md5 - 2>/dev/null; }
  dts() { ffprobe -v error -select_streams v:0 -show_entries packet=dts -of csv=p=0 "$1" | awk 'NR>1 && $1<=p {bad++} {p=$1} END {print bad+0}'; }
  {
    echo "framemd5 (pts, duration, picture) digest: uninterrupted $(md5 "$work/medium_j2.mp4"), resumed $(md5 "$work/killed.mp4")"
    echo "audio: source $(amd5 "$clip"), uninterrupted $(amd5 "$work/medium_j2.mp4"), resumed $(amd5 "$work/killed.mp4")"
    echo "non-increasing video DTS in the resumed file: $(dts "$work/killed.mp4")"
    echo "decode errors in the resumed file: $(ffmpeg -v error -i "$work/killed.mp4" -f null - 2>&1 | wc -l)"
  } | tee -a "$summary"
  if [[ $(md5 "$work/medium_j2.mp4") != $(md5 "$work/killed.mp4") ]]; then
    echo "resumed and uninterrupted frames differ; PSNR: $(ffmpeg -v info -i "$work/killed.mp4" -i "$work/medium_j2.mp4" \
      -lavfi '[0:v][1:v]psnr' -f null - 2>&1 | grep -oE 'average:[0-9.inf]+')" | tee -a "$summary"
    status=1
  fi
}

compare() {
  echo "date: $(date -u +%FT%TZ)  commit: ${RAVE_COMMIT:-unknown}" | tee "$summary"
  for sf in 1000000 50; do
    say "rave benchmark --segment-frames $sf"
    rave benchmark -i "$clip" --device "$device" --progress off --segment-frames "$sf" --json >"$out/bench_sf$sf.json" \
      2>"$out/bench_sf$sf.err" || { status=1; tail -3 "$out/bench_sf$sf.err"; }
    python3 - "$out/bench_sf$sf.json" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
n, f = r["null_encode"], r["full"]
print(f"  inference alone {r['inference_only']['fps']:.2f} fps; null encode {n['fps']:.2f} fps ({n['segments']} segments, "
      f"{r['null_vs_inference']:.3f} of inference); full (veryfast) {f['fps']:.2f} fps ({f['segments']} segments)")
PY
  done
  python3 - "$out/bench_sf1000000.json" "$out/bench_sf50.json" <<'PY' | tee -a "$summary"
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:])
print(f"segmenting cost, null encoder: {100 * (1 - many['null_encode']['fps'] / one['null_encode']['fps']):.2f}% "
      f"(1 segment {one['null_encode']['fps']:.2f} fps, {many['null_encode']['segments']} segments {many['null_encode']['fps']:.2f} fps)")
PY
  if python3 -c "import torch" 2>/dev/null; then
    for preset in veryfast medium; do
      say "Python pipeline, libx264 $preset"
      python3 "$bin/python_pipeline.py" "$bin/animevideov3-x2.npz" "$clip" "$work/py_$preset.mp4" --frames "$frames" \
        --preset "$preset" 2>&1 | tee "$out/python_$preset.txt" | tail -2 | sed "s/^/python $preset: /" | tee -a "$summary"
    done
  fi
}

case "${1:-}" in
  sweep) sweep ;;
  compare) compare ;;
  *) echo "usage: $0 sweep|compare" >&2; exit 2 ;;
esac
exit $status
