#!/usr/bin/env bash
# Call 3 (carry .wa; .snap and the installed wheels stay from call 2): the first half of CuTe
# DSL's and TileLang's packages, and the replay agent on the problems with CUDA/Triton versions only.
set -uo pipefail
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
cd .snap
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=270 AGENTS=replay AGENT_ROUNDS=3 AGENT_PROBLEMS="swiglu layer_norm prefix_sum" bash bench/gpu_suite.sh agents | tail -12
