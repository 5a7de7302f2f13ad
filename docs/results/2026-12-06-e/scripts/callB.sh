#!/usr/bin/env bash
# Call B (carry .wb; the warm machine of call A, which left .wa's half in /tmp/wheels): the CuTe DSL
# and TileLang packages unpacked; the CuTe matmul probe; then every CUDA C++, CuTe DSL and TileLang
# example of vector add, softmax and matmul through the whole ladder (profile included), and built
# again from the cache (bench/gpu_suite.sh backends).
set -uo pipefail
OUT=${OUT:-/tmp/out}
[ -f /tmp/wheels/pkgs.part.00 ] || { echo "no /tmp/wheels/pkgs.part.00: call A's machine is gone"; exit 3; }
(cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh) > "$OUT/unpack.log" 2>&1 || { tail -5 "$OUT/unpack.log"; exit 1; }
tail -1 "$OUT/unpack.log"
PYTHONPATH=$PWD/src timeout 60 python3 bench/cute_probe.py > "$OUT/cute_probe.log" 2>&1; tail -5 "$OUT/cute_probe.log"
STAGE_CAP_S=${STAGE_CAP_S:-120} EXAMPLES="matmul vector_add softmax" OUT=$OUT timeout 500 bash bench/gpu_suite.sh backends
