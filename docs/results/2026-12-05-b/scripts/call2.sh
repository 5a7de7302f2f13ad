#!/usr/bin/env bash
# Call 2 (same warm machine as call 1; carry .snap .wb): the second half of the packages, unpacked
# into the image's Python; then the backends stage (CUDA C++, CuTe DSL, TileLang, right and wrong).
mkdir -p /tmp/wheels && cp .wb/* /tmp/wheels/ && bash .snap/bench/unpack_wheels.sh 2>&1 | tail -3
cd .snap && export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 RUNG_CACHE_DIR=/tmp/suite/cache RUNG_BASELINE=none WORK=/tmp/suite
mkdir -p /tmp/suite && STAGE_CAP_S=200 EXAMPLES="matmul vector_add softmax" timeout 500 bash bench/gpu_suite.sh backends 2>&1 | tail -40
