#!/usr/bin/env bash
# Calls B (carry .wcore .problem-sets .resume; LIMIT seconds, default 560), resumed from the tables
# an earlier call brought back (.resume/pv, .resume/ttv):
# 1. GPU MODE's vectoradd_py, every solution beside its eval.py (the parity table's one problem
#    with a single row), the suite's settings (RUNG_BASELINE=none RUNG_SKIP=profile).
# 2. Time to verdict with the full default ladder (torch.compile baseline, profile): each pmpp_v2
#    problem's submission.py, cold (fresh workspace and cache), warm and in the loop, beside
#    eval.py's test plus benchmark (bench/parity_gpumode.py --examples-only).
# pv.tar.gz and ttv.tar.gz come back.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-560}
began=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
mkdir -p /tmp/pv /tmp/ttv
[ -f .resume/pv/parity.json ] && cp .resume/pv/parity.* /tmp/pv/
[ -f .resume/ttv/parity.json ] && cp .resume/ttv/parity.* /tmp/ttv/
suite() {  # suite NAME SECONDS [ARGS...]: parity_gpumode.py resumed into /tmp/NAME
  local name=$1 s=$2 && shift 2
  PYTHONPATH=$PWD/src:$PWD/bench timeout "$s" python3 bench/parity_gpumode.py --resume \
    --max-seconds "$((s - 25))" --out "/tmp/$name" "$@" >> "/tmp/$name.log" 2>&1
  grep -E "^[a-z]|stopped" "/tmp/$name.log" | tail -12
  tar czf "$OUT/$name.tar.gz" --exclude=solutions -C /tmp "$name" "$name.log"
}
grep -q '"complete": true' /tmp/pv/parity.json 2>/dev/null || suite pv 330 --only vectoradd_py
echo "after vectoradd: $((SECONDS - began)) s"
S=$((LIMIT - (SECONDS - began) - 10))
[ "$S" -ge 90 ] && RUNG_BASELINE=compile RUNG_SKIP= suite ttv "$S" --examples-only
echo "done: $((SECONDS - began)) s"
