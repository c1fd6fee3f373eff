#!/usr/bin/env bash
# The damage corpus on the GPU path, on the GPU machine after scripts/gpu_tests.sh staged
# /opt/rave-dev: every clip of CORPUS_DIR (made on the development machine by
#   RAVE_CORPUS_DIR=DIR cargo test -p rave-cli --test damage_corpus
# plus the 720p HEVC 10-bit case below) is upscaled with --device gpu (NVDEC where it decodes)
# and with --device cpu; both must end the same way: the same exit code, the same error kind
# and, when they succeed, the same number of frames. Clean clips must succeed on both.
# Usage: scripts/gpu_damage.sh CORPUS_DIR; results go to $OUT (or ./gpu-results).
set -uo pipefail
corpus="${1:?usage: $0 CORPUS_DIR}"
out="${OUT:-$(pwd)/gpu-results}"; mkdir -p "$out"
export PATH="/opt/rave-dev/payload:$PATH"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
model=tests/fixtures/nearest_x2.onnx   # tiny: the runs measure the reader, not the model
status=0
verdict() { # FILE DEVICE -> "exit kind frames"
  local json rc
  # One output per input and device: a refused run keeps its work folder (a resumable job),
  # which another input or device must not meet.
  json=$(timeout 120 rave upscale -i "$1" -o "$work/$(basename "$1").$2.mkv" --overwrite -m "$model" --device "$2" \
    --json --progress off 2>"$work/err")
  rc=$?
  python3 - "$rc" "$json" <<'PY'
import json, sys
rc, text = sys.argv[1], sys.argv[2]
try:
    v = json.loads(text)
except ValueError:
    print(rc, "no-json", "-"); sys.exit()
if "error" in v:
    d = v["error"].get("damage") or {}
    print(rc, v["error"]["kind"], d.get("frames_missing", "-"), "|", d.get("first_problem"))
else:
    print(rc, v["status"], v["frames_out"])
PY
}
printf '%-34s %-28s %-28s %s\n' file gpu cpu same | tee "$out/damage_gpu.txt"
same=0 differ=0
for f in "$corpus"/*; do
  case "$f" in *.out.mkv|*.allowed.mkv) continue ;; esac
  gv=$(verdict "$f" gpu); cv=$(verdict "$f" cpu)
  g=${gv%% |*}; c=${cv%% |*}
  if [[ "$g" == "$c" ]]; then ok=yes; same=$((same + 1)); else ok=NO; differ=$((differ + 1)); status=1; fi
  case "$(basename "$f")" in *-clean.*) [[ "$g" == 0\ complete* ]] || { ok="NO (clean refused)"; status=1; } ;; esac
  printf '%-34s %-28s %-28s %s\n' "$(basename "$f")" "$g" "$c" "$ok" | tee -a "$out/damage_gpu.txt"
  [[ $ok == yes ]] || printf '    gpu: %s\n    cpu: %s\n' "${gv#* | }" "${cv#* | }" | tee -a "$out/damage_gpu.txt"
done
echo "same verdict on GPU and CPU: $same; different: $differ" | tee -a "$out/damage_gpu.txt"
exit $status
