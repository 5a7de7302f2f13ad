#!/usr/bin/env bash
# Call B (carry .wa; the wheels installed by call A stay on the warm machine): the first half of
# CuTe DSL's and TileLang's packages, and the tune agent (Optuna) from every naive version.
set -uo pipefail
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=280 AGENTS=tune AGENT_ROUNDS=2 bash bench/gpu_suite.sh agents | tail -12
