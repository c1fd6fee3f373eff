#!/usr/bin/env bash
# Tiling and the VRAM budget on the GPU machine (issue 13), after scripts/gpu_tests.sh staged
# /opt/rave-dev: real-content clips (photographs, scripts/make_sample_clip.sh) upscaled with
# and without a budget, on RAVE's native engine and on ONNX Runtime's CUDA provider:
#   1. realesrgan-x4plus, 1920x1080 input: untiled, --vram-limit 8GiB, --vram-limit 4GiB;
#   2. compact x2 (realesr-animevideov3-x2), 3840x2160 input (8K out): untiled, 8GiB, 4GiB
#      (`rave benchmark`: inference alone, null encoder, libx264);
#   3. --tile 512x512 given, and a budget too small for any tile (refused, exit 2).
# Each run's fps, tiling, RAVE's VRAM peak and the device's peak come from the JSON report;
# the tiled output against the untiled one by PSNR (average and worst frame), both encoded
# losslessly (libx264 --crf 0, so the encoder's own noise is not in it). Logs and JSON go to
# $OUT (or ./gpu-results); TILING_FRAMES (default 60) sets the 1080p clip's length.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
frames="${TILING_FRAMES:-60}"
say() { echo "== $*" | tee -a "$out/tiling.txt"; }

bash "$root/scripts/make_sample_clip.sh" "$work/hd.mp4" 1920 1080 "$frames" >/dev/null || status=1
bash "$root/scripts/make_sample_clip.sh" "$work/uhd.mp4" 3840 2160 30 >/dev/null || status=1

psnr() {
  local avg worst
  avg=$(ffmpeg -v info -i "$1" -i "$2" -lavfi "[0:v][1:v]psnr=stats_file=$work/psnr.log" -f null - 2>&1 | grep -oE 'average:[0-9.inf]+' | cut -d: -f2)
  worst=$(grep -oE 'psnr_avg:[0-9.inf]+' "$work/psnr.log" | cut -d: -f2 | sort -g | head -1)
  echo "${avg:-?} dB (worst frame ${worst:-?})"
}
# fps, tiling, VRAM (RAVE's account peak, the device's peak) and the budget from a report.
line() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r = r.get("full_report", r)
g = (r.get("gpu") or {}).get("health") or {}
mib = lambda v: "?" if v is None else f"{v / 1048576:.0f} MiB"
t = r.get("tiling") or {}
print(f'{r["backend"]["name"]}: {r.get("fps", 0):.2f} fps ({r.get("pipeline_fps", 0):.2f} first frame to last) over {r.get("frames_out", r.get("frames", "?"))} frames; '
      f'RAVE peak {mib(g.get("vram_peak"))}, device peak {mib(g.get("device_peak"))}, budget {mib(g.get("vram_limit"))}; '
      f'tiling: {"tiles %sx%s, %sx%s a frame" % (*t["tile"], *t["grid"]) if t.get("tile") else "off"} ({t.get("reason")})')
PY
}

x4=realesrgan-x4plus-fp16
for engine in native cuda; do
  for limit in none 8GiB 4GiB; do
    name="x4_${engine}_${limit}"
    say "$x4, 1920x1080 -> 3840x2160, --backend $engine, --vram-limit $limit"
    args=(--device gpu --backend "$engine" -m "$x4" --preset ultrafast --crf 0 --json)
    [[ $limit == none ]] || args+=(--vram-limit "$limit")
    if rave upscale -i "$work/hd.mp4" -o "$work/$name.mp4" "${args[@]}" >"$out/$name.json" 2>"$out/$name.err"; then
      line "$out/$name.json" | tee -a "$out/tiling.txt"
      [[ $limit == none ]] || echo "PSNR against untiled: $(psnr "$work/$name.mp4" "$work/x4_${engine}_none.mp4")" | tee -a "$out/tiling.txt"
    else
      status=1; tail -3 "$out/$name.err" | tee -a "$out/tiling.txt"
    fi
  done
done

name=x4_native_4GiB_channels1
say "$x4, 1920x1080, --backend native, --vram-limit 4GiB --channels 4,2,1 (one upscaled frame queued, so less memory kept for frames in flight)"
if rave upscale -i "$work/hd.mp4" -o "$work/$name.mp4" --device gpu --backend native -m "$x4" --preset ultrafast --crf 0 --vram-limit 4GiB --channels 4,2,1 --json >"$out/$name.json" 2>"$out/$name.err"; then
  line "$out/$name.json" | tee -a "$out/tiling.txt"
  echo "PSNR against untiled: $(psnr "$work/$name.mp4" "$work/x4_native_none.mp4")" | tee -a "$out/tiling.txt"
else
  status=1; tail -3 "$out/$name.err" | tee -a "$out/tiling.txt"
fi

x2=realesr-animevideov3-x2
for engine in native cuda; do
  for limit in none 8GiB 4GiB; do
    name="x2_4k_${engine}_${limit}"
    say "$x2, 3840x2160 -> 7680x4320, --backend $engine, --vram-limit $limit (rave benchmark)"
    args=(--device gpu --backend "$engine" -m "$x2" --frames 30 --json)
    [[ $limit == none ]] || args+=(--vram-limit "$limit")
    if rave benchmark -i "$work/uhd.mp4" "${args[@]}" >"$out/$name.json" 2>"$out/$name.err"; then
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("inference alone %.2f fps, null encoder %.2f fps, libx264 veryfast %.2f fps" % (r["inference_only"]["fps"], r["null_encode"]["fps"], r["full"]["fps"]))' "$out/$name.json" | tee -a "$out/tiling.txt"
      line "$out/$name.json" | tee -a "$out/tiling.txt"
    else
      status=1; tail -3 "$out/$name.err" | tee -a "$out/tiling.txt"
    fi
  done
done

for engine in native cuda; do
  name="x2_tile512_$engine"
  say "$x2, 1920x1080, --tile 512x512, --backend $engine"
  if rave upscale -i "$work/hd.mp4" -o "$work/$name.mp4" --device gpu --backend "$engine" -m "$x2" --tile 512x512 --preset ultrafast --crf 0 --json >"$out/$name.json" 2>"$out/$name.err" &&
     rave upscale -i "$work/hd.mp4" -o "$work/${name}_whole.mp4" --device gpu --backend "$engine" -m "$x2" --preset ultrafast --crf 0 --json >"$out/${name}_whole.json" 2>>"$out/$name.err"; then
    line "$out/$name.json" | tee -a "$out/tiling.txt"
    line "$out/${name}_whole.json" | tee -a "$out/tiling.txt"
    echo "PSNR tiled against whole: $(psnr "$work/$name.mp4" "$work/${name}_whole.mp4")" | tee -a "$out/tiling.txt"
    echo "frames: $(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$work/$name.mp4"), audio packets: $(ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=nb_read_packets -of csv=p=0 "$work/$name.mp4") (input $(ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=nb_read_packets -of csv=p=0 "$work/hd.mp4"))" | tee -a "$out/tiling.txt"
  else
    status=1; tail -3 "$out/$name.err" | tee -a "$out/tiling.txt"
  fi
done

say "a budget too small for any tile: --vram-limit 64MiB"
rave upscale -i "$work/hd.mp4" -o "$work/small_budget.mp4" --device gpu -m "$x4" --vram-limit 64MiB >"$out/small_budget.out" 2>"$out/small_budget.err"
code=$?
echo "exit $code: $(cat "$out/small_budget.err")" | tee -a "$out/tiling.txt"
[[ $code == 2 && ! -e "$work/small_budget.mp4" ]] || status=1
exit $status
