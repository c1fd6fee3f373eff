#!/usr/bin/env bash
# README command 2: set up, then run every test that needs no GPU: the Rust workspace
# (unit, CLI contract and end-to-end CPU upscale tests) and the model-conversion checks
# against the ncnn package. Ends with one line totalling both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# ONNX Runtime (1.29+) queues usage telemetry for Microsoft on Linux unless this is set
# before it starts (rave sets it itself; the tests and Python tools load the runtime too).
export ORT_DISABLE_TELEMETRY="${ORT_DISABLE_TELEMETRY:-1}"
bash "$root/scripts/setup.sh"
cd "$root"
RAVE_HOME="${RAVE_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/rave}"
export RAVE_HOME
log="$(mktemp)"

# The Slurm end-to-end test (crates/rave-cli/tests/slurm_e2e.rs) needs a cluster: a one-node
# one on this machine, stopped at the end unless it was already running. RAVE_REQUIRE_SLURM=1
# makes that test fail, not skip, where Slurm does not answer.
slurm_was_up=0
bash scripts/slurm_local.sh status >/dev/null 2>&1 && slurm_was_up=1
echo "test: starting a one-node Slurm cluster (scripts/slurm_local.sh)"
bash scripts/slurm_local.sh start
export RAVE_REQUIRE_SLURM=1
trap 'rm -f "$log"; ((slurm_was_up)) || bash scripts/slurm_local.sh stop >/dev/null' EXIT

echo "test: cargo test"
set +e
(
  cargo test --workspace --no-fail-fast
  ws=$?
  # The debug guards are behind cargo features; their own tests run with them on.
  cargo test -p rave-core --features debug-alloc --test debug_alloc
  da=$?
  exit $((ws || da))
) >"$log" 2>&1
rust_status=$?
set -e
grep -E '^(test |failures:|---- |thread |error)|panicked|test result|^\s+Running' "$log" || cat "$log"
read -r rust_pass rust_fail < <(awk '/^test result:/ {p += $4; f += $6} END {print p+0, f+0}' "$log")
# A test program killed by a signal prints no result line: name it here, at the end,
# where a shortened log still shows it.
crashed="$(grep -E "process didn't exit successfully.*\(signal: " "$log" || true)"

echo "test: model conversion against ncnn"
set +e
"$RAVE_HOME/venv/bin/python" -m pytest -q tools/tests | tee "$log"
py_status=${PIPESTATUS[0]}
set -e
py_pass=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
py_fail=$(grep -oE '[0-9]+ failed' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)

summary="total: $((rust_pass + py_pass)) passed, $((rust_fail + py_fail)) failed"
if [[ -n $crashed ]]; then
  printf 'test: these test programs ended without a result:\n%s\n' "$crashed"
  summary+=", $(grep -c . <<<"$crashed") test program(s) ended without a result"
fi
echo "$summary"
[[ $rust_status == 0 && $py_status == 0 ]]
