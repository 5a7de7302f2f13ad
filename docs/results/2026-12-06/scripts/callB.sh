#!/usr/bin/env bash
# Call B (nothing carried: the SDKs installed by call A stay on the warm machine): the replay
# agent, recorded tool-using conversations through the real SDK, from every naive version.
# CuTe DSL and TileLang are not installed here: versions in them fail at load, as they would
# for a user without the extras.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
STAGE_CAP_S=470 AGENTS=replay AGENT_ROUNDS=3 bash bench/gpu_suite.sh agents | tail -12
