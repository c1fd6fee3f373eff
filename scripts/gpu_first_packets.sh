#!/usr/bin/env bash
# A stream's first PES with a damaged timestamp, and joins whose times overlap or whose
# second part's first sound is damaged (the twenty-second session's changes), on NVDEC
# against the CPU: for each input, the exit code without --allow-corrupt, then with it the
# frames and audio packets in and out and whether the GPU output's frame and audio times
# equal the CPU output's (and the clean file's, where one is named).
# On the GPU machine after the staged calls of scripts/gpu_tests.sh stage.
# Usage: OUT=DIR bash scripts/gpu_first_packets.sh
source /opt/rave-dev/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
ff() { ffmpeg -v error -y "$@"; }
clip() { # name seconds audio_codec [extra output options...]
  local name=$1 seconds=$2 audio=$3
  shift 3
  ff -f lavfi -i "testsrc2=s=640x360:r=25:d=$seconds" -f lavfi -i "sine=f=440:r=48000:d=$seconds" \
    -c:v libx264 -g 25 -bf 2 -c:a "$audio" "$@" "$work/$name"
}
# flip IN OUT KIND NTH BIT [FROM_BYTE]: PTS bit BIT of the NTH audio (a: 0xC0-0xDF, 0xBD) or
# video (v: 0xE0) PES at or after FROM_BYTE.
flip() {
  python3 - "$@" <<'EOF'
import sys
src, dst, kind, nth, bit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
start = int(sys.argv[6]) if len(sys.argv) > 6 else 0
b = bytearray(open(src, "rb").read())
want = (lambda i: i == 0xE0) if kind == "v" else (lambda i: i & 0xE0 == 0xC0 or i == 0xBD)
n = 0
for off in range(start - start % 188, len(b) - 188, 188):
    if b[off] != 0x47 or not b[off + 1] & 0x40 or off < start:
        continue
    afc = (b[off + 3] >> 4) & 3
    p = off + 4 + (1 + b[off + 4] if afc == 3 else 0)
    if afc == 2 or b[p:p + 3] != b"\0\0\1" or not want(b[p + 3]):
        continue
    if n == nth:
        q = p + 9
        rd = lambda: ((b[q] >> 1 & 7) << 30) | (b[q + 1] << 22) | ((b[q + 2] >> 1) << 15) | (b[q + 3] << 7) | (b[q + 4] >> 1)
        v = rd() ^ (1 << bit)
        b[q] = (b[q] & 0xF0) | ((v >> 30 & 7) << 1) | 1
        b[q + 1] = v >> 22 & 0xFF
        b[q + 2] = ((v >> 15 & 0x7F) << 1) | 1
        b[q + 3] = v >> 7 & 0xFF
        b[q + 4] = ((v & 0x7F) << 1) | 1
        break
    n += 1
open(dst, "wb").write(b)
EOF
}
clip first.ts 4 aac
clip a1.ts 3 mp2 -pes_payload_size 0
clip a2.ts 3 mp2 -pes_payload_size 0
clip ac3.ts 4 ac3 -pes_payload_size 0
clip p1.ts 4 mp2
clip p2.ts 3 mp2 -output_ts_offset 3.8
cat "$work/a1.ts" "$work/a2.ts" > "$work/join.ts"
cat "$work/p1.ts" "$work/p2.ts" > "$work/overlap.ts"
seam=$(stat -c %s "$work/a1.ts")
flip "$work/first.ts" "$work/idr_late.ts" v 0 14
flip "$work/first.ts" "$work/pts_below_dts.ts" v 0 17
flip "$work/first.ts" "$work/audio_ahead.ts" a 0 18
flip "$work/first.ts" "$work/audio_late.ts" a 0 13
flip "$work/ac3.ts" "$work/ac3_ahead.ts" a 0 19
flip "$work/join.ts" "$work/join_sound_ahead.ts" a 0 19 "$seam"
count() { ffprobe -v quiet -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" | tr -d ',' | grep -v '^$' | head -1; }
apk() { ffprobe -v quiet -select_streams a:0 -show_entries packet=size -of csv=p=0 "$1" | grep -c .; }
times() { ffprobe -v error -select_streams "$2" -show_entries packet=pts_time -of csv=p=0 "$1" | sort -g | md5sum | cut -c1-8; }
for case in idr_late:first pts_below_dts:first audio_ahead:first audio_late:first ac3_ahead:ac3 join_sound_ahead:join overlap:; do
  input=${case%%:*}.ts
  clean=${case##*:}
  line="$input: in $(count "$work/$input") frames, $(apk "$work/$input") audio packets"
  for device in gpu cpu; do
    rave upscale -i "$work/$input" -o "$work/strict_$device.mkv" --device "$device" -m tests/fixtures/nearest_x2.onnx --progress off > "$work/log" 2>&1
    strict=$?
    o="$work/${input%.ts}_$device.mkv"
    rave upscale -i "$work/$input" -o "$o" --device "$device" -m tests/fixtures/nearest_x2.onnx --progress off --allow-corrupt > "$work/log" 2>&1
    rc=$?
    said=$(grep -oE "restart [0-9]+ time|first problem: .{0,90}" "$work/log" | sort -u | tr '\n' ' ')
    line="$line | $device: exit $strict, --allow-corrupt exit $rc, $(count "$o") frames, $(apk "$o") audio, video times $(times "$o" v:0), audio times $(times "$o" a:0); $said"
  done
  if [ -n "$clean" ]; then
    c="$work/clean_$clean.mkv"
    [ -f "$c" ] || rave upscale -i "$work/$clean.ts" -o "$c" --device gpu -m tests/fixtures/nearest_x2.onnx --progress off > /dev/null 2>&1
    line="$line | clean $clean.ts on the GPU: video times $(times "$c" v:0), audio times $(times "$c" a:0)"
  fi
  echo "$line"
done | tee "$out/first_packets.txt"
