#!/usr/bin/env bash
# Not run (no device time left): issue 14's backends on a GPU, for a later session, in two calls
# on one warm machine (bench/pack_wheels.sh makes .wa and .wb here first):
#   call A (carry .wa .wcore): python3 -m pip install -q --no-index --no-deps --no-compile \
#            --break-system-packages .wcore/*.whl && mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
#   call B (carry .wb): bash docs/results/2026-12-06-d/scripts/next_backends.sh
# The packages unpacked, the CuTe matmul probe, then every CUDA C++, CuTe DSL and TileLang example
# of vector add, softmax and matmul through the whole ladder, profile included, and built again
# from the cache. About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}
cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh || exit 1
PYTHONPATH=$PWD/src timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -5 "$OUT/cute_probe.log"
STAGE_CAP_S=${STAGE_CAP_S:-110} EXAMPLES="matmul vector_add softmax" OUT=$OUT bash bench/gpu_suite.sh backends
