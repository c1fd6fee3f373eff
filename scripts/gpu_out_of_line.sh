#!/usr/bin/env bash
# Frames whose timestamps are out of line with the frames around them (a flipped bit in an
# MP4 composition offset), on the GPU path: NVDEC decodes them, the reader holds four
# frames to judge each (four more NVDEC surfaces), and the damaged frame must go back to
# its place with every other frame at its own time, as on the CPU. On the GPU machine after
# scripts/gpu_tests.sh staged /opt/rave-dev. Results go to $OUT (or ./gpu-results).
set -uo pipefail
source /opt/rave-dev/env.sh
export PATH="/opt/rave-dev/payload:$PATH"
out="${OUT:-$(pwd)/gpu-results}"; mkdir -p "$out"
w="$(mktemp -d)"; trap 'rm -rf "$w"' EXIT
model=tests/fixtures/nearest_x2.onnx
ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=4 -f lavfi -i sine=sample_rate=48000:duration=4 \
  -c:v libx264 -c:a aac -shortest "$w/clean.mp4"
# flip FIRST COUNT BIT: bit BIT of the ctts offsets of COUNT samples from FIRST (decode order).
flip() {
  python3 - "$w/clean.mp4" "$w/d$1-$2-$3.mp4" "$1" "$2" "$3" <<'PY'
import struct, sys
src, dst, first, count, bit = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
d = bytearray(open(src, 'rb').read())
at = d.find(b'ctts'); entries = struct.unpack('>I', d[at + 8:at + 12])[0]
sample = 0
for k in range(entries):
    p = at + 12 + 8 * k
    n, off = struct.unpack('>II', d[p:p + 8])
    if first <= sample < first + count:
        struct.pack_into('>I', d, p + 4, off ^ (1 << bit))
    sample += n
open(dst, 'wb').write(d)
PY
}
times() { ffprobe -v error -select_streams v -show_entries frame=pts -of csv=p=0 "$1" | tr -d ',' | md5sum | cut -c1-12; }
for dev in gpu cpu; do
  rave upscale -i "$w/clean.mp4" -o "$w/clean.$dev.mkv" -m "$model" --device $dev --progress off > /dev/null 2>&1
done
echo "clean: gpu times $(times "$w/clean.gpu.mkv"), cpu times $(times "$w/clean.cpu.mkv")" | tee "$out/out_of_line.txt"
for case in "50 1 13" "50 1 10" "50 1 9" "50 2 13" "50 2 10"; do
  flip $case; f="$w/d${case// /-}.mp4"
  for dev in gpu cpu; do
    rave upscale -i "$f" -o "$w/r.$dev.mkv" -m "$model" --device $dev --progress off > "$w/log" 2>&1; refused=$?
    json=$(rave upscale -i "$f" -o "$w/o.$dev.mkv" -m "$model" --device $dev --allow-corrupt --json --progress off --overwrite 2>/dev/null)
    rc=$?
    summary=$(python3 -c 'import json,sys; v=json.loads(sys.argv[1]); d=v["input_damage"]; print(v["frames_out"], "out, nvdec", v.get("decode",{}).get("nvdec_frames","?"), "missing", d["frames_missing"], "dropped", d["frames_dropped"])' "$json" 2>/dev/null)
    echo "ctts $case $dev: default exit $refused, --allow-corrupt exit $rc, $summary, times $(times "$w/o.$dev.mkv")"
  done
done | tee -a "$out/out_of_line.txt"
