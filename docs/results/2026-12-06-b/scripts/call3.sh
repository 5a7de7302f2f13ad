#!/usr/bin/env bash
# Call 3: candidates per minute through the local executor on this GPU, 24 candidates (18).
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=200 THROUGHPUT_COUNT=24 bash bench/gpu_suite.sh throughput | tail -8
