#!/usr/bin/env bash
# One call (device time is scarce): time to verdict of the tuned softmax with and without kept
# reference timings; verdict parity with GPU MODE's eval.py on a subset; time to verdict with
# the torch.compile baseline kept.
set -u
cp -r .problem-sets .snap/ 2>/dev/null
cd .snap
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
timeout 150 python3 bench/ttv.py --variants kept,fresh --climbs 3 --out "$OUT/ttv.json" 2>&1 | tee "$OUT/ttv.log"
timeout 260 python3 bench/parity_gpumode.py --out "$OUT/parity_gpumode" --only "${ONLY:-vectoradd_py,grayscale_py}" --max-seconds 240 2>&1 | tail -25
timeout 120 python3 bench/ttv.py --variants baseline --climbs 2 --out "$OUT/ttv_baseline.json" 2>&1 | tee "$OUT/ttv_baseline.log"
