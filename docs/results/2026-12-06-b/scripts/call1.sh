#!/usr/bin/env bash
# Call 1 (carry .whl: rung's runtime wheels and the LLM SDKs): what dump and trace add to the
# tuned matmul and vector add (issue 16), then the tune agent from every naive version (17).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=180 OVERHEAD="matmul vector_add" bash bench/gpu_suite.sh overhead | tail -8
STAGE_CAP_S=250 AGENTS=tune AGENT_ROUNDS=2 bash bench/gpu_suite.sh agents | tail -12
