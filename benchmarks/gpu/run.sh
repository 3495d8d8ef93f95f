#!/usr/bin/env bash
# The GPU suite in one command: GPU tests, matmul benchmark, full-model latency (docs/gpu.md).
#
#   benchmarks/gpu/run.sh --out "$OUT"             # on the GPU machine
#   benchmarks/gpu/run.sh --out /tmp/gpu --dry-run # anywhere: every step that needs no GPU
#
# The Python is $PYTHON (default python3); it must import tmlir's dependencies (on the GPU
# machine, from the wheels of `make gpu-wheels`). The project root goes on PYTHONPATH.
# Options: `benchmarks/gpu/run.sh --help`.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
exec "${PYTHON:-python3}" benchmarks/gpu/suite.py "$@"
