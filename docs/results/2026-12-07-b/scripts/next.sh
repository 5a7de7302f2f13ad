#!/usr/bin/env bash
# Calls of a later session (carry .wcore .problem-sets), stage by stage:
#   STAGES="kb ttv prof" LIMIT=580 bash docs/results/2026-12-07-b/scripts/next.sh  # about 450 s
#   STAGES=spread LIMIT=560 bash docs/results/2026-12-07-b/scripts/next.sh # a second call
# kb, ttv and prof ran in 2026-12-07-c, on an H100 (no H200 could be had); spread has not run.
# What issue 15's done-when still lacks, read from this session's tables:
# kb:     KernelBench level 1 21 alone on the GPU. In 2026-12-07-b it ran beside level 1 31's
#         check on one H200, and the two ran rung's judge and the solution process out of its
#         memory; its rows are dropped from the resumed table and judged again (KernelBench's five
#         evaluations are kept).
# ttv:    vectorsum_py's time to verdict with the full default ladder, the one pmpp_v2 problem
#         without it.
# prof:   where the profile's 26 to 29 s go on grayscale and sort (the profile rung's `spent`:
#         ncu's seconds, its replay passes, the report's reading), one check each.
# spread: one kernel, one number on the H200 (bench/spread.py, 2026-12-06-f call C's entries).
# kb.tar.gz, ttv.tar.gz, prof.tar.gz and spread.tar.gz come back.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-560}
STAGES=${STAGES:-kb ttv prof spread}
KB_ONLY=${KB_ONLY:-level1/21}  # the KernelBench problems the kb stage judges again
HERE=docs/results/2026-12-07-b
P=.problem-sets/gpumode/pmpp_v2
began=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
for stage in $STAGES; do
  echo "== $stage at $((SECONDS - began)) s"
  case $stage in
  kb)
    mkdir -p /tmp/kb
    python3 -c "import json,sys; json.dump({k: v for f in sys.argv[1:] for k, v in json.load(open(f)).items()}, open('/tmp/kb/kernelbench_evals.json', 'w'))" \
      "$HERE"/kb/kb*/kernelbench_evals.json
    python3 - "$HERE/kb/kb/parity.json" /tmp/kb/parity.json "$KB_ONLY" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
again = tuple(f"{o}_" for o in sys.argv[3].split(","))
doc["rows"] = [r for r in doc["rows"] if not r["problem"].startswith(again)]
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
    PYTHONPATH=$PWD/src:$PWD/bench timeout $((LIMIT < 260 ? LIMIT - 10 : 260)) python3 bench/parity_kernelbench.py --batch \
      --only "$KB_ONLY" --max-seconds $((LIMIT < 260 ? LIMIT - 40 : 230)) --resume --out /tmp/kb > /tmp/kb.log 2>&1
    grep -E "^level|stopped" /tmp/kb.log
    tar czf "$OUT/kb.tar.gz" --exclude=solutions -C /tmp kb kb.log ;;
  ttv)
    mkdir -p /tmp/ttv && cp "$HERE/ttv/ttv/parity.json" /tmp/ttv/
    RUNG_BASELINE=compile RUNG_SKIP= PYTHONPATH=$PWD/src:$PWD/bench timeout 150 python3 bench/parity_gpumode.py \
      --examples-only --only vectorsum_py --resume --max-seconds 125 --out /tmp/ttv > /tmp/ttv.log 2>&1
    tail -14 /tmp/ttv/parity.md
    tar czf "$OUT/ttv.tar.gz" --exclude=solutions -C /tmp ttv ttv.log ;;
  prof)
    mkdir -p /tmp/prof/ws
    for p in grayscale sort; do
      [ $((LIMIT - (SECONDS - began))) -ge 130 ] || { echo "prof: $p left out, too few seconds"; continue; }
      RUNG_BASELINE=none RUNG_SKIP= RUNG_WORKSPACE=/tmp/prof/ws PYTHONPATH=$PWD/src timeout 120 \
        python3 -m rung check "$P/${p}_py" "$P/${p}_py/submission.py" --json > "/tmp/prof/$p.json" 2> "/tmp/prof/$p.err"
      python3 -c "import json,sys; r={x['name']: x for x in json.load(open(sys.argv[1]))['solutions'][0]['rungs']}['profile']; print(sys.argv[2], r['status'], r['seconds'], r['metrics'].get('spent'))" "/tmp/prof/$p.json" "$p"
    done
    tar czf "$OUT/prof.tar.gz" -C /tmp/prof grayscale.json grayscale.err sort.json sort.err ;;
  spread)
    S=$((LIMIT - (SECONDS - began) - 10))
    [ "$S" -ge 120 ] || { echo "spread: $S s left, too few"; continue; }
    PYTHONPATH=$PWD/src timeout "$S" python3 bench/spread.py --only "matvec split-K,sort,softmax" \
      --max-seconds "$((S - 40))" --out /tmp/spread > /tmp/spread.log 2>&1
    tail -30 /tmp/spread/spread.md
    tar czf "$OUT/spread.tar.gz" -C /tmp spread spread.log ;;
  esac
done
echo "done: $((SECONDS - began)) s"
