#!/usr/bin/env bash
# Call 3 as it ran (carry .problem-sets; the machine of calls 1 and 2, 494 s of device time left):
# KernelBench level 1 21's same.py in a check of its own, to see its correct rung's message (the
# suite keeps 300 characters), its wrong solutions in one check cut at 100 s (they gave no JSON in
# call 1; this too was cut, and left nothing), then the sample's next problems with --resume.
set -uo pipefail
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD/src RUNG_BASELINE=none RUNG_SKIP=profile
K=.problem-sets/kernelbench/KernelBench/level1
timeout 100 python3 -m rung check $K/21_Sigmoid.py /tmp/kb/solutions/level1_21_Sigmoid/same.py > "$OUT/sig_same.txt"
timeout 100 python3 -m rung check $K/21_Sigmoid.py /tmp/kb/solutions/level1_21_Sigmoid/scaled.py \
  /tmp/kb/solutions/level1_21_Sigmoid/input.py --json > "$OUT/sig_batch.json"
PYTHONPATH=$PWD/src:$PWD/bench timeout 250 python3 bench/parity_kernelbench.py --batch \
  --only level1/31,level1/41,level1/51,level2/1 --max-seconds 235 --resume --out /tmp/kb > "$OUT/kb3.log" 2>&1
cp /tmp/kb/parity.* "$OUT/"
