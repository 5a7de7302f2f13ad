#!/usr/bin/env bash
# Call 4 (carry .wb): CuTe DSL and TileLang unpacked, the CuTe probe, every backend's examples
# through the ladder, then the replay agent on the problems with CuTe DSL and TileLang versions.
set -uo pipefail
cp .wb/* /tmp/wheels/ && bash .snap/bench/unpack_wheels.sh | tail -3
cd .snap
export OUT=${OUT:-/tmp/out}
timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -25 "$OUT/cute_probe.log"
STAGE_CAP_S=150 EXAMPLES="matmul vector_add softmax" bash bench/gpu_suite.sh backends | tail -5
mv "$OUT/results.tar.gz" "$OUT/backends.tar.gz"
STAGE_CAP_S=150 AGENTS=replay AGENT_ROUNDS=2 AGENT_PROBLEMS="vector_add matmul softmax" bash bench/gpu_suite.sh agents | tail -12
