#!/usr/bin/env bash
# Call 2 (carry .snap .whl): the prefix-sum scans (variants, then the CUDA versions through the
# ladder), and the tune agent.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
cd .snap
export OUT=${OUT:-/tmp/out}
timeout 170 python3 bench/scan_variants.py --out "$OUT/scan_variants.json" > "$OUT/scan_variants.log" 2>&1
tail -30 "$OUT/scan_variants.log"
STAGE_CAP_S=130 EXAMPLES=prefix_sum bash bench/gpu_suite.sh backends | tail -5
mv "$OUT/results.tar.gz" "$OUT/prefix_sum.tar.gz"
STAGE_CAP_S=100 AGENTS=tune AGENT_ROUNDS=3 AGENT_PROBLEMS="softmax vector_add" bash bench/gpu_suite.sh agents | tail -4
