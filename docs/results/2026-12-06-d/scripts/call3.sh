#!/usr/bin/env bash
# Call 3 (the same warm machine, CuTe DSL and TileLang unpacked by call 2): the CuTe matmul probe,
# then every CUDA C++, CuTe DSL and TileLang example of vector add, softmax and matmul through the
# whole ladder, profile included, and built again from the cache. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}
PYTHONPATH=$PWD/src timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -5 "$OUT/cute_probe.log"
STAGE_CAP_S=${STAGE_CAP_S:-110} EXAMPLES="matmul vector_add softmax" OUT=$OUT bash bench/gpu_suite.sh backends
