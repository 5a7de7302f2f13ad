#!/usr/bin/env bash
# Call D (nothing carried: SDKs and CuTe DSL/TileLang stay installed on the warm machine): the
# replay agent (recorded tool-using conversations through the real SDK) from every naive version.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=500 AGENTS=replay AGENT_ROUNDS=3 bash bench/gpu_suite.sh agents | tail -12
