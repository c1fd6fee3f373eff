#!/usr/bin/env bash
# README command 1: set up, build, make a sample clip of real photographs with sound, and
# upscale it x2 with the realesr-animevideov3 model on this machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
echo "demo: building rave (release)"
cargo build --release --quiet
mkdir -p out
bash scripts/make_sample_clip.sh out/sample.mp4 320 180 100 >/dev/null
echo "demo: made out/sample.mp4 (320x180, 100 frames, stereo sound)"
./target/release/rave upscale -i out/sample.mp4 -o out/sample_x2.mp4 --overwrite "$@"
echo "demo: result: $root/out/sample_x2.mp4"
