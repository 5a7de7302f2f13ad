#!/usr/bin/env bash
# Call 1 (carry .wa .wcore .problem-sets; about 540 s): rung's runtime wheels installed, the first
# half of the CuTe DSL / TileLang packages left in /tmp/wheels for call 2, then KernelBench's
# parity sample with --batch (same.py cold alone, the other four in one rung check), level 1
# problem 11 first: the guard's memory since the out-of-memory of 2026-12-06-c.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
git log -1 --format=%H > "$OUT/commit.txt" 2>/dev/null || true
only=level1/11,level1/21,level1/31,level1/41,level1/51,level1/61,level1/71,level1/81,level1/91
only=$only,level2/1,level2/21,level2/41,level2/61,level2/81
PYTHONPATH=$PWD/src:$PWD/bench timeout 545 python3 bench/parity_kernelbench.py --batch --only "$only" \
  --max-seconds 525 --out /tmp/kb > "$OUT/kb.log" 2>&1
cp -r /tmp/kb "$OUT/kb"
grep -E "^level|stopped" "$OUT/kb.log" | tail -80
