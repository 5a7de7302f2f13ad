#!/usr/bin/env bash
# Issue 16's profiler-trace fixture (bench's CUPTI traces of the tuned softmax) and issue 17's
# tune agent from the four naive versions that list TUNE values. Carry .whl; about 560 s.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
export OUT=${OUT:-/tmp/out}
PYTHONPATH=$PWD/src:$PWD timeout 90 python3 bench/capture_artifacts.py --only profiler --out /tmp/artifacts
tar czf "$OUT/artifacts.tar.gz" -C /tmp artifacts
STAGE_CAP_S=450 AGENTS=tune AGENT_ROUNDS=2 AGENT_PROBLEMS="layer_norm matmul prefix_sum swiglu" \
  bash bench/gpu_suite.sh agents | tail -8
