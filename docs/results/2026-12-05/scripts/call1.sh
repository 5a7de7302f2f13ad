#!/usr/bin/env bash
# Call 1: stash the first wheel part; time to verdict of the tuned softmax with and without kept
# reference timings (bench/ttv.py); the gpu tests where TESTS=1.
set -u
mkdir -p /tmp/wheels && cp .w1/* /tmp/wheels/
cd .snap
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
timeout 280 python3 bench/ttv.py --out "$OUT/ttv.json" --climbs 3 2>&1 | tee "$OUT/ttv.log"
[ "${TESTS:-0}" = 1 ] && RUNG_CACHE_DIR=/tmp/cache timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py > "$OUT/gpu_tests.log" 2>&1
tail -8 "$OUT/gpu_tests.log"
