#!/usr/bin/env bash
# Call C (carry .problem-sets; alone on the GPU). One kernel,
# one number for the entries still open: the split-K matvec with each input set's median, GPU
# MODE's sort (its false FAIL at bench), the tuned softmax. spread.tar.gz comes back.
set -uo pipefail
OUT=${OUT:-/tmp/out}
PYTHONPATH=$PWD/src timeout "${SPREAD_S:-540}" python3 bench/spread.py --only "matvec split-K,sort,softmax" \
  --max-seconds "$((${SPREAD_S:-540} - 60))" --out /tmp/spread > /tmp/spread.log 2>&1
tail -30 /tmp/spread/spread.md
tar czf "$OUT/spread.tar.gz" -C /tmp spread spread.log
