#!/usr/bin/env bash
# Call 1 (2026-12-05, second session): raw artifacts of ncu and proton for CPU fixtures
# (bench/capture_artifacts.py); the tuned vector add and softmax climbed by the rung before the
# judge/solution redesign (8b3b17a, carried as .old/src) and by this one, interleaved
# (bench/before_after.py); time to verdict with and without kept reference timings (bench/ttv.py).
set -u
# The first half of CuTe DSL's and TileLang's packages (bench/pack_wheels.sh), kept for a later call.
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl 2>&1 | tail -2
cd .snap  # HEAD as committed (git archive), not the shared working tree
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p /tmp/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee /tmp/r/gpu.txt
timeout 200 python3 bench/capture_artifacts.py --out /tmp/r/artifacts 2>&1 | tail -8
tar czf "$OUT/artifacts.tar.gz" -C /tmp/r artifacts
timeout 200 python3 bench/before_after.py --old ../.old/src --out /tmp/r/before_after.json > /tmp/r/before_after.md 2>&1
tail -22 /tmp/r/before_after.md
timeout 150 python3 bench/ttv.py --variants kept,fresh --climbs 3 --out /tmp/r/ttv.json 2>&1 | tee /tmp/r/ttv.log | tail -12
cp /tmp/r/gpu.txt /tmp/r/before_after.* /tmp/r/ttv.* "$OUT/"
timeout 120 python3 bench/ttv_phases.py --problem problems/vector_add --out /tmp/r/ttv_phases.json 2>&1 | tail -8
cp /tmp/r/ttv_phases.json "$OUT/"
