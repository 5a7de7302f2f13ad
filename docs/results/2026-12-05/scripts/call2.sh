#!/usr/bin/env bash
# Call 2: stash the second wheel part; verdict parity with GPU MODE's eval.py on a subset.
set -u
mkdir -p /tmp/wheels && cp .w2/* /tmp/wheels/ && ls /tmp/wheels
cp -r .problem-sets .snap/
cd .snap
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
timeout 330 python3 bench/parity_gpumode.py --out "$OUT/parity_gpumode" --only "${ONLY:-vectoradd_py,grayscale_py,prefixsum_py}" --max-seconds 300 2>&1 | tail -30
