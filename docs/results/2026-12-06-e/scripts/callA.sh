#!/usr/bin/env bash
# Call A (carry .wa .wcore .problem-sets): rung's runtime wheels installed, the first half of the
# CuTe DSL / TileLang packages left in /tmp/wheels for call B; then KernelBench's whole parity
# sample (ten level-1, five level-2 problems) with --batch, in three streams at once to fit the
# device time: their verdicts are what is compared here, their seconds are not clean (three checks
# share the GPU). Level 1 21 and 31 (6 GiB tensors) share one stream so they never overlap.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
stream() {
  PYTHONPATH=$PWD/src:$PWD/bench timeout 470 python3 bench/parity_kernelbench.py --batch --only "$2" \
    --max-seconds 420 --resume --out "/tmp/kb$1" > "$OUT/kb$1.log" 2>&1
  mkdir -p "$OUT/kb$1" && cp /tmp/kb$1/parity.* "$OUT/kb$1/"
}
stream 1 level1/21,level1/31,level1/1,level2/81 &
stream 2 level1/41,level1/51,level1/61,level1/71,level2/1 &
stream 3 level1/81,level1/91,level2/21,level2/41,level2/61,level1/11 &
wait
grep -hE "^level|stopped" "$OUT"/kb?.log
nvidia-smi --query-gpu=memory.used --format=csv
