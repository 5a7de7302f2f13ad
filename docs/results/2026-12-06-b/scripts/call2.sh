#!/usr/bin/env bash
# Call 2 (nothing carried: the SDKs call 1 installed stay on the warm machine): the replay agent,
# recorded tool-using conversations through the real SDK, from every naive version (17). CuTe
# DSL and TileLang are not installed: versions in them fail at load, as for a user without the
# extras.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=420 AGENTS=replay AGENT_ROUNDS=3 bash bench/gpu_suite.sh agents | tail -12
