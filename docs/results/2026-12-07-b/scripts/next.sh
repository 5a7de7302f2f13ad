#!/usr/bin/env bash
# Not run yet: the next session's call (carry .wcore .problem-sets; LIMIT seconds, default 560, on
# an H200). What issue 15's done-when still lacks, read from this session's tables:
# 1. KernelBench level 1 21 alone on the GPU. In 2026-12-07-b it ran beside level 1 31's check on
#    one H200, and the two ran rung's judge and the solution process out of its memory; its rows
#    are dropped from the resumed table and judged again (KernelBench's five evaluations are kept).
# 2. vectorsum_py's time to verdict with the full default ladder, the one pmpp_v2 problem without it.
# 3. For the time left, one kernel, one number on the H200 (bench/spread.py, the entries of
#    2026-12-06-f's call C). kb.tar.gz, ttv.tar.gz and spread.tar.gz come back.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-560}
HERE=docs/results/2026-12-07-b
began=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
mkdir -p /tmp/kb /tmp/ttv
cp "$HERE/kb/kb1/kernelbench_evals.json" /tmp/kb/
python3 - "$HERE/kb/kb/parity.json" /tmp/kb/parity.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["rows"] = [r for r in doc["rows"] if not r["problem"].startswith("level1/21_")]
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
PYTHONPATH=$PWD/src:$PWD/bench timeout 260 python3 bench/parity_kernelbench.py --batch --only level1/21 \
  --max-seconds 230 --resume --out /tmp/kb > /tmp/kb.log 2>&1
grep -E "^level|stopped" /tmp/kb.log
tar czf "$OUT/kb.tar.gz" --exclude=solutions -C /tmp kb kb.log
echo "after level 1 21: $((SECONDS - began)) s"
cp "$HERE/ttv/ttv/parity.json" /tmp/ttv/
RUNG_BASELINE=compile RUNG_SKIP= PYTHONPATH=$PWD/src:$PWD/bench timeout 150 python3 bench/parity_gpumode.py \
  --examples-only --only vectorsum_py --resume --max-seconds 125 --out /tmp/ttv > /tmp/ttv.log 2>&1
tail -14 /tmp/ttv/parity.md
tar czf "$OUT/ttv.tar.gz" --exclude=solutions -C /tmp ttv ttv.log
S=$((LIMIT - (SECONDS - began) - 10))
echo "after vectorsum: $((SECONDS - began)) s; spread gets $S s"
[ "$S" -ge 120 ] || exit 0
PYTHONPATH=$PWD/src timeout "$S" python3 bench/spread.py --only "matvec split-K,sort,softmax" \
  --max-seconds "$((S - 40))" --out /tmp/spread > /tmp/spread.log 2>&1
tail -30 /tmp/spread/spread.md
tar czf "$OUT/spread.tar.gz" -C /tmp spread spread.log
