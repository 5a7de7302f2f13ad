#!/usr/bin/env bash
# Call 1 (carry .snap .whl): the gpu tests, what dump and trace cost, the agents on three examples.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
cd .snap
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=200 bash bench/gpu_suite.sh tests
STAGE_CAP_S=150 OVERHEAD="softmax matmul vector_add" bash bench/gpu_suite.sh overhead
mv "$OUT/results.tar.gz" "$OUT/tests_overhead.tar.gz"
STAGE_CAP_S=110 AGENT_ROUNDS=3 AGENT_PROBLEMS="softmax vector_add" bash bench/gpu_suite.sh agents
