#!/usr/bin/env bash
# Call 2 as it ran with .problem-sets only (carry .wb too to unpack; the machine of call 1): the CuTe DSL and TileLang
# packages unpacked for call 3 (the first half is in /tmp/wheels since call 1); then one kernel, one
# number (bench/spread.py: five fresh `rung check`s per entry and input style); then what is left
# of KernelBench's sample (ONLY=level/number,...; none if empty). About 540 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}
# Unpacked first (about 10 s), not beside the timing: a busy host shifts launch gaps.
(cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh) > "$OUT/unpack.log" 2>&1; tail -1 "$OUT/unpack.log"
PYTHONPATH=$PWD/src timeout 400 python3 bench/spread.py --max-seconds 330 --out "$OUT/spread" > "$OUT/spread.log" 2>&1
tail -30 "$OUT/spread/spread.md"
if [ -n "${ONLY:-}" ]; then
  PYTHONPATH=$PWD/src:$PWD/bench timeout 170 python3 bench/parity_kernelbench.py --batch --only "$ONLY" \
    --max-seconds 160 --resume --out /tmp/kb > "$OUT/kb2.log" 2>&1
  cp -r /tmp/kb "$OUT/kb"
  grep -E "^level|stopped" "$OUT/kb2.log" | tail -40
fi
