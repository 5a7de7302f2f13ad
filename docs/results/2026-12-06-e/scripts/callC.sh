#!/usr/bin/env bash
# Call C (carry .problem-sets; the machine of calls A and B, or a fresh one): KernelBench's sample
# resumed where call A's streams stopped (from /tmp/kbN, or from the rows call A brought back),
# then, alone on the GPU, one kernel, one number for the entries still open: the split-K matvec
# (now with each input set's median) and GPU MODE's sort (its false FAIL at bench), then softmax.
set -uo pipefail
OUT=${OUT:-/tmp/out}
HERE=docs/results/2026-12-06-e
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
stream() {
  [ -f "/tmp/kb$1/parity.json" ] || { mkdir -p "/tmp/kb$1" && cp "$HERE/callA/kb$1/parity.json" "/tmp/kb$1/"; }
  PYTHONPATH=$PWD/src:$PWD/bench timeout "${KB_S:-250}" python3 bench/parity_kernelbench.py --batch --only "$2" \
    --max-seconds "$((${KB_S:-250} - 40))" --resume --out "/tmp/kb$1" > "$OUT/kb$1.log" 2>&1
  mkdir -p "$OUT/kb$1" && cp /tmp/kb$1/parity.* "$OUT/kb$1/"
}
stream 1 level1/21,level1/31,level1/1,level2/81 &
stream 2 level1/41,level1/51,level1/61,level1/71,level2/1 &
stream 3 level1/81,level1/91,level2/21,level2/41,level2/61,level1/11 &
wait
grep -hE "^level|stopped" "$OUT"/kb?.log
PYTHONPATH=$PWD/src timeout "${SPREAD_S:-300}" python3 bench/spread.py --only "matvec split-K,sort,softmax" \
  --max-seconds "$((${SPREAD_S:-300} - 40))" --out "$OUT/spread" > "$OUT/spread.log" 2>&1
tail -30 "$OUT/spread/spread.md"
