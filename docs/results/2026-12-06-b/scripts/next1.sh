#!/usr/bin/env bash
# For the next GPU session (carry .whl and .problem-sets; about 560 s): bench's CUPTI traces of
# the tuned softmax for the trace rung's fixture (issue 16), the tune agent from the four naive
# versions that now list TUNE values (17), GPU MODE's grayscale again after the rotation fix (15).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
export OUT=${OUT:-/tmp/out}
PYTHONPATH=$PWD/src:$PWD timeout 120 python3 bench/capture_artifacts.py --only profiler --out /tmp/artifacts
tar czf "$OUT/artifacts.tar.gz" -C /tmp artifacts  # the device tool brings back few files: one archive
STAGE_CAP_S=250 AGENTS=tune AGENT_ROUNDS=2 AGENT_PROBLEMS="layer_norm matmul prefix_sum swiglu" \
  bash bench/gpu_suite.sh agents | tail -8
PYTHONPATH=$PWD/src:$PWD/bench timeout 150 python3 bench/parity_gpumode.py --only grayscale_py \
  --max-seconds 140 --out "$OUT/parity" | tail -12
