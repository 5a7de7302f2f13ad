#!/usr/bin/env bash
# This session's calls (carry .wcore .problem-sets, and .before for warm), stage by stage:
#   STAGES=ttv LIMIT=560 bash docs/results/2026-12-07-d/scripts/call.sh
#   STAGES=spread LIMIT=560 bash docs/results/2026-12-07-d/scripts/call.sh
#   STAGES=warm LIMIT=400 bash docs/results/2026-12-07-d/scripts/call.sh
# ttv:    every pmpp_v2 problem's submission.py cold, warm and in the loop beside eval.py's test
#         plus benchmark, with the verdict's rungs only (load through roofline; dump, trace,
#         profile and scopes skipped, the torch.compile baseline kept), each side's timing
#         precision per case recorded (eval.py's mean's error, rung's median's).
# warm:   the judge's CUDA start-up overlapping the solution process's (c9c1651's tree in
#         .before, carried, against this one): grayscale, matmul and sort cold, warm and in the
#         loop, as the ttv stage runs them, before then after.
# spread: one kernel, one number (bench/spread.py, 2026-12-06-f call C's entries).
# SPREAD_GPU=H200 leaves the spread stage out on any other card;
# NEED_GPU=H200 stops at once, exit 3, on any other card (the spread tables lack only an H200 run).
# ttv.tar.gz, warm.tar.gz and spread.tar.gz come back. The warm stage measured 7b214b2, since reverted.
set -uo pipefail
mkdir -p /tmp/warm
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-560}
STAGES=${STAGES:-ttv}
began=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
grep -q "${NEED_GPU:-NVIDIA}" "$OUT/gpu.txt" || { echo "not an ${NEED_GPU:-}: stopped"; exit 3; }
for stage in $STAGES; do
  echo "== $stage at $((SECONDS - began)) s"
  S=$((LIMIT - (SECONDS - began) - 10))
  case $stage in
  ttv)
    RUNG_BASELINE=compile RUNG_SKIP=dump,trace,profile,scopes PYTHONPATH=$PWD/src:$PWD/bench timeout "$S" \
      python3 bench/parity_gpumode.py --examples-only --resume --max-seconds "$((S - 20))" --out /tmp/ttv > /tmp/ttv.log 2>&1
    tail -14 /tmp/ttv/parity.md
    tar czf "$OUT/ttv.tar.gz" --exclude=solutions -C /tmp ttv ttv.log ;;
  warm)
    ln -sfn "$PWD/.problem-sets" .before/.problem-sets  # the old tree's suite reads the sets beside it
    for tree in before after; do
      root=$PWD; [ $tree = before ] && root=$PWD/.before
      RUNG_BASELINE=compile RUNG_SKIP=dump,trace,profile,scopes PYTHONPATH=$root/src:$root/bench timeout "$((S / 2))" \
        python3 "$root/bench/parity_gpumode.py" --examples-only --only grayscale_py,matmul_py,sort_py \
        --max-seconds "$((S / 2 - 15))" --out "/tmp/warm/$tree" > "/tmp/warm/$tree.log" 2>&1
      tail -5 "/tmp/warm/$tree/parity.md"
    done
    tar czf "$OUT/warm.tar.gz" --exclude=solutions -C /tmp warm ;;
  spread)
    [ "$S" -ge 120 ] || { echo "spread: $S s left, too few"; continue; }
    grep -q "${SPREAD_GPU:-NVIDIA}" "$OUT/gpu.txt" || { echo "spread: not an ${SPREAD_GPU:-}, left out"; continue; }
    PYTHONPATH=$PWD/src timeout "$S" python3 bench/spread.py --only "matvec split-K,sort,softmax" \
      --max-seconds "$((S - 40))" --out /tmp/spread > /tmp/spread.log 2>&1
    tail -30 /tmp/spread/spread.md
    tar czf "$OUT/spread.tar.gz" -C /tmp spread spread.log ;;
  esac
done
echo "done: $((SECONDS - began)) s"
