#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with the wheels the GPU machine lacks, for CPython 3.12 on
# manylinux x86_64: the pinned set of benchmarks/gpu/requirements.txt (tmlir's xdsl and
# test tools; transformers and onnxscript for exporting the full-size models). Prints the
# total size (a device call carries at most 64 MiB) and the install line. Run from anywhere.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
python=${PYTHON:-python3}
rm -rf .whl && mkdir -p .whl
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  -d .whl -r benchmarks/gpu/requirements.txt 2> >(grep -v "is ignored: it is neither" >&2)
count=$(ls .whl/*.whl | wc -l)
bytes=$(cat .whl/*.whl | wc -c)
echo "$count wheels in .whl/: $((bytes / 1024 / 1024)) MiB ($bytes bytes)"
if [ "$bytes" -gt $((48 * 1024 * 1024)) ]; then
  echo "error: .whl/ is over 48 MiB; a device call carries 64 MiB in all" >&2
  exit 1
fi
cat <<'MSG'
In the device call: carry [".whl"] and begin the command with
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH || exit 1;
MSG
