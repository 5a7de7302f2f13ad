#!/usr/bin/env bash
# Call 2 (carry .wb; the machine of call 1, still warm): the CuTe DSL and TileLang packages
# unpacked, the CuTe matmul probe, then every CUDA C++, CuTe DSL and TileLang example of vector
# add, softmax and matmul through the whole ladder, profile included, and built again from the
# cache. About 480 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}
cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh || exit 1
PYTHONPATH=$PWD/src timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -5 "$OUT/cute_probe.log"
STAGE_CAP_S=130 EXAMPLES="matmul vector_add softmax" OUT=$OUT bash bench/gpu_suite.sh backends
