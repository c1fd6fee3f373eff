#!/usr/bin/env bash
# Make a sample clip of real picture content: a slow pan and zoom over photographs shipped
# in the scikit-image wheel (a cat and a cup of coffee; scripts/setup.sh fetches them), with a
# stereo sound track.
# Usage: make_sample_clip.sh OUT.mp4 [WIDTH HEIGHT FRAMES [GOP]]   (25 fps; defaults 320 180 100,
# GOP libx264's 250: a keyframe every GOP frames, where segments can be cut)
set -euo pipefail
out="$1"; w="${2:-320}"; h="${3:-180}"; frames="${4:-100}"; gop="${5:-250}"
secs="$(awk "BEGIN{print $frames/25}")"
RAVE_HOME="${RAVE_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/rave}"
photos="$RAVE_HOME/photos"
[[ -s "$photos/chelsea.png" && -s "$photos/coffee.png" ]] || {
  echo "make_sample_clip: $photos lacks the sample photos; run scripts/setup.sh" >&2; exit 1; }
half=$(( (frames + 1) / 2 ))
fit="scale=$((w*2)):$((h*2)):force_original_aspect_ratio=increase,crop=$((w*2)):$((h*2)),setsar=1"
ffmpeg -v error -y \
  -i "$photos/chelsea.png" \
  -i "$photos/coffee.png" \
  -f lavfi -i "sine=frequency=330:sample_rate=48000:duration=$secs" \
  -f lavfi -i "sine=frequency=495:sample_rate=48000:duration=$secs" \
  -filter_complex "\
[0:v]$fit,zoompan=z='min(zoom+0.004,1.4)':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=$half:s=${w}x${h}:fps=25,setsar=1[a];\
[1:v]$fit,zoompan=z='1.3':x='(iw-iw/zoom)*on/$half':y='ih/4':d=$half:s=${w}x${h}:fps=25,setsar=1[b];\
[a][b]concat=n=2:v=1:a=0,format=yuv420p[v];[2:a][3:a]amerge=inputs=2[au]" \
  -map "[v]" -map "[au]" -t "$secs" -c:v libx264 -preset veryfast -crf 16 -g "$gop" -color_primaries bt709 \
  -color_trc bt709 -colorspace bt709 -c:a aac -b:a 128k "$out"
echo "$out"
