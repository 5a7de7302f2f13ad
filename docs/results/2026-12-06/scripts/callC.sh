#!/usr/bin/env bash
# Call C (carry .wb): CuTe DSL and TileLang unpacked, the CuTe matmul probe, then every CUDA C++,
# CuTe DSL and TileLang example, right and wrong, through the ladder and again from the build cache.
set -uo pipefail
cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh | tail -3
export OUT=${OUT:-/tmp/out}
timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -25 "$OUT/cute_probe.log"
STAGE_CAP_S=110 EXAMPLES="matmul vector_add softmax" bash bench/gpu_suite.sh backends | tail -8
