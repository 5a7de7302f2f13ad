#!/usr/bin/env bash
# Call C: candidates per minute through the local executor on this GPU (32 candidates).
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=280 THROUGHPUT_COUNT=32 bash bench/gpu_suite.sh throughput | tail -8
