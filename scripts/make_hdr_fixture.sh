#!/usr/bin/env bash
# Make tests/fixtures/hdr10_64x48.mkv: 3 frames of HEVC 10-bit BT.2020/PQ whose Matroska track
# carries HDR10 mastering-display metadata (BT.2020 primaries, D65, 1000/0.005 cd/m²) and
# content light level (MaxCLL 1000, MaxFALL 400). FFmpeg 5.1's CLI cannot attach that
# metadata to a stream, so mkvmerge (mkvtoolnix) writes it; FFmpeg reads it as stream side
# data, which is what RAVE copies. Usage: make_hdr_fixture.sh [OUT.mkv]
set -euo pipefail
out="${1:-$(dirname "$0")/../tests/fixtures/hdr10_64x48.mkv}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
ffmpeg -v error -y -f lavfi -i "testsrc2=size=64x48:rate=25:duration=0.12" \
  -c:v libx265 -preset ultrafast -x265-params log-level=error -pix_fmt yuv420p10le \
  -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc -color_range tv \
  "$tmp/plain.mkv"
mkvmerge -q -o "$out" \
  --max-content-light 0:1000 --max-frame-light 0:400 \
  --max-luminance 0:1000 --min-luminance 0:0.005 \
  --chromaticity-coordinates 0:0.708,0.292,0.170,0.797,0.131,0.046 \
  --white-colour-coordinates 0:0.3127,0.3290 \
  "$tmp/plain.mkv"
echo "$out"
