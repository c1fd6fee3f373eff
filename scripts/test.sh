#!/usr/bin/env bash
# README command 2: set up, then run every test that needs no GPU: the Rust workspace
# (unit, CLI contract and end-to-end CPU upscale tests) and the model-conversion checks.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
RAVE_HOME="${RAVE_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/rave}"
export RAVE_HOME
echo "test: cargo test"
cargo test --workspace --quiet
echo "test: model conversion against ncnn"
"$RAVE_HOME/venv/bin/python" -m pytest -q tools/tests
