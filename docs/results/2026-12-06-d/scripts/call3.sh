#!/usr/bin/env bash
# Call 3 (carry .problem-sets; the same warm machine): one kernel, one number (bench/spread.py: five
# fresh `rung check`s per entry and input style), then what is left of KernelBench's sample
# (ONLY=level/number,...; none if empty). About 540 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}
PYTHONPATH=$PWD/src timeout 360 python3 bench/spread.py --out "$OUT/spread" > "$OUT/spread.log" 2>&1
tail -30 "$OUT/spread/spread.md"
if [ -n "${ONLY:-}" ]; then
  PYTHONPATH=$PWD/src:$PWD/bench timeout 170 python3 bench/parity_kernelbench.py --batch --only "$ONLY" \
    --max-seconds 160 --resume --out /tmp/kb > "$OUT/kb3.log" 2>&1
  cp -r /tmp/kb "$OUT/kb"
  grep -E "^level|stopped" "$OUT/kb3.log" | tail -40
fi
