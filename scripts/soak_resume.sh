#!/usr/bin/env bash
# Soak test of resuming (docs/SOAK.md): an 8-minute clip of real picture content with sound,
# upscaled once without interruption and once through SIGKILL, SIGTERM, SIGKILL and SIGHUP
# at the given seconds, each followed by the same command; the two outputs must be the same
# to the byte in their video and audio packets and their decoded frames.
# Usage: soak_resume.sh [FOLDER [RAVE [MODEL]]]   (defaults /tmp/rave-soak, target/release/rave,
# tests/fixtures/nearest_x2.onnx); needs scripts/setup.sh's photos.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-/tmp/rave-soak}"; rave="${2:-$repo/target/release/rave}"
model="${3:-$repo/tests/fixtures/nearest_x2.onnx}"
mkdir -p "$dir" && cd "$dir" || exit 1
[[ -s long.mp4 ]] || bash "$repo/scripts/make_sample_clip.sh" long.mp4 320 180 12000 250 >/dev/null
rm -rf ref.mkv out.mkv out.partial*.mkv .out.mkv.rave-work .ref.mkv.rave-work
opts=(-m "$model" --preset ultrafast --progress off)
start=$(date +%s)
"$rave" upscale -i long.mp4 -o ref.mkv "${opts[@]}" > ref.txt 2>&1
echo "uninterrupted: exit $? in $(( $(date +%s) - start )) s"
whole=$(( $(date +%s) - start ))
# A run stopped by `signal` after `percent` of the uninterrupted run's time (a background
# job of a script ignores SIGINT, which RAVE keeps ignored: SIGTERM is the script's Ctrl+C).
stopped() {
  [[ -e out.mkv ]] && return
  local after=$(( whole * $2 / 100 + 1 ))
  "$rave" upscale -i long.mp4 -o out.mkv "${opts[@]}" > "run_$3.txt" 2>&1 & local pid=$!
  sleep "$after"; kill "$1" "$pid" 2>/dev/null; wait "$pid"
  echo "run $3: $1 after $after s: exit $?; $(grep -ho 'segments: [^,]*([^)]*)' "run_$3.txt")"
}
stopped -KILL 30 1
stopped -TERM 25 2
stopped -KILL 20 3
stopped -HUP 15 4
[[ -e out.mkv ]] || "$rave" upscale -i long.mp4 -o out.mkv "${opts[@]}" > run_5.txt 2>&1
for f in ref.mkv out.mkv; do
  frames=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$f")
  audio=$(ffprobe -v error -select_streams a -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$f")
  v=$(ffmpeg -v error -i "$f" -map 0:v -c copy -f data - | md5sum | cut -c1-12)
  a=$(ffmpeg -v error -i "$f" -map 0:a -c copy -f data - | md5sum | cut -c1-12)
  d=$(ffmpeg -v error -i "$f" -map 0:v -f rawvideo - | md5sum | cut -c1-12)
  echo "$f: $frames frames, $audio audio packets, video packets $v, audio packets $a, decoded $d"
done
