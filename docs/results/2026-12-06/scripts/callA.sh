#!/usr/bin/env bash
# Call A (carry .whl: rung's runtime wheels and the LLM SDKs): what dump and trace add to the
# tuned matmul and vector add, then candidates per minute through the local executor on this GPU.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=250 OVERHEAD="matmul vector_add" bash bench/gpu_suite.sh overhead | tail -8
mv "$OUT/results.tar.gz" "$OUT/overhead.tar.gz"
STAGE_CAP_S=270 THROUGHPUT_COUNT=32 bash bench/gpu_suite.sh throughput | tail -8
