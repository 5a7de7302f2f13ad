#!/usr/bin/env bash
# Call A (carry .whl: rung's runtime wheels and the LLM SDKs): what dump and trace add to the
# tuned matmul and vector add, then the tune agent (Optuna) from every naive version.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=230 OVERHEAD="matmul vector_add" bash bench/gpu_suite.sh overhead | tail -8
STAGE_CAP_S=250 AGENTS=tune AGENT_ROUNDS=2 bash bench/gpu_suite.sh agents | tail -12
