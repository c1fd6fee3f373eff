#!/usr/bin/env bash
# The GPU suite (without ncu, peers and the kernel benchmark), the damage corpus on NVDEC
# against the CPU, MPEG-TS files near the 33-bit clock wrap and a variable-rate video's last frame on NVDEC; on the H200 after
# the staged calls of scripts/gpu_tests.sh stage unpacked /opt/rave-dev (the corpus in
# .device/corpus: RAVE_CORPUS_DIR=$PWD/.device/corpus cargo test --release -p rave-cli --test damage_corpus).
# Usage: bash scripts/gpu_suite_damage_wrap.sh suite|damage|vfr
set -uo pipefail
source /opt/rave-dev/env.sh
export PATH="/opt/rave-dev/payload:$PATH"
out="${OUT:-$(pwd)/gpu-results}"; mkdir -p "$out"
case "${1:?suite|damage|vfr}" in
suite)
  RAVE_NO_NCU=1 RAVE_NO_PEERS=1 RAVE_SKIP_KERNEL_BENCH=1 bash scripts/gpu_tests.sh run > "$out/gpu_tests.log" 2>&1
  echo "gpu_tests rc $?"; grep -E "passed|failed|FAIL" "$out/gpu_tests.log" | tail -8
  ;;
damage)
  bash scripts/gpu_damage.sh .device/corpus > "$out/damage.log" 2>&1
  echo "gpu_damage rc $?"; tail -8 "$out/damage.log"
  # MPEG-TS whose timestamps all lie before the 33-bit wrap (read as negative), and one
  # crossing it: NVDEC + the default model, to Matroska and MP4.
  w=$(mktemp -d)
  for off in 95438 95441; do
    ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=3 -f lavfi -i sine=duration=3 \
      -c:v libx264 -bf 2 -g 12 -c:a aac -output_ts_offset $off "$w/w$off.ts"
    for ext in mkv mp4; do
      rave upscale -i "$w/w$off.ts" -o "$w/o$off.$ext" --device gpu --progress off > "$w/log" 2>&1
      rc=$?
      fin=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$w/w$off.ts")
      fout=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$w/o$off.$ext" 2>/dev/null)
      ain=$(ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$w/w$off.ts" | grep -c .)
      aout=$(ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$w/o$off.$ext" 2>/dev/null | grep -c .)
      start=$(ffprobe -v error -show_entries format=start_time -of csv=p=0 "$w/o$off.$ext" 2>/dev/null)
      echo "wrap offset $off -> $ext: exit $rc, video frames $fin in / $fout out, audio packets $ain in / $aout out, output starts at $start s; $(grep -m1 -E 'decoder|error' "$w/log")"
    done
  done | tee "$out/before_wrap.txt"
  ;;
vfr)
  # A video that slows from 30 to 10 fps for its last second (two parts joined with the
  # concat demuxer): the output's last frame must last as long as the input's, so the
  # container's duration is the input's, on NVDEC with the default model, B-frames or not.
  w=$(mktemp -d)
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libx264 -video_track_timescale 90000 "$w/fast.mp4"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=10:duration=1 -c:v libx264 -video_track_timescale 90000 "$w/slow.mp4"
  printf "file '%s'\nfile '%s'\n" "$w/fast.mp4" "$w/slow.mp4" > "$w/parts.txt"
  ffmpeg -v error -f concat -safe 0 -i "$w/parts.txt" -c copy "$w/in.mp4"
  dur() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }
  for extra in "" "--preset ultrafast" "--segment-frames 20"; do
    for ext in mp4 mkv; do
      rave upscale -i "$w/in.mp4" -o "$w/out.$ext" --device gpu --overwrite --progress off $extra > "$w/log" 2>&1
      echo "vfr ${extra:-default} -> $ext: exit $?, input lasts $(dur "$w/in.mp4") s, output $(dur "$w/out.$ext") s; $(grep -m1 decoder "$w/log")"
    done
  done | tee "$out/vfr_last_frame.txt"
  ;;
esac
