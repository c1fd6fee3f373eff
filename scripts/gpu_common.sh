# Sourced by the GPU scripts (scripts/gpu_*.sh) on the GPU machine, after the staged calls of
# scripts/gpu_tests.sh stage unpacked /opt/rave-dev: sets root (this checkout), out ($OUT,
# else ./gpu-results, created), bin (the staged binaries, first on PATH; RAVE_HOME there,
# where their models are, unless set), work (a scratch folder, removed on exit unless the
# script sets its own EXIT trap after sourcing), status=0, say (a section heading) and
# small_clips.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-results}"; mkdir -p "$out"
bin=/opt/rave-dev/payload
export PATH="$bin:$PATH"
export RAVE_HOME="${RAVE_HOME:-$bin}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
status=0
say() { echo "== $*"; }

# Two seconds of 320x180 H.264 with AAC: $work/small.mp4, and $work/small.mkv with a
# subtitle stream besides.
small_clips() {
  ffmpeg -v error -f lavfi -i "testsrc2=size=320x180:rate=24" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
    -t 2 -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -shortest "$work/small.mp4" || status=1
  printf '1\n00:00:00,000 --> 00:00:01,000\nhello\n' >"$work/sub.srt"
  ffmpeg -v error -i "$work/small.mp4" -i "$work/sub.srt" -map 0 -map 1 -c copy -c:s srt "$work/small.mkv" || status=1
}
