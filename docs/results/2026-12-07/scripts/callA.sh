#!/usr/bin/env bash
# Call A (carry .wcore .problem-sets .before; about 570 s): time to verdict before and after bench's
# stop on the median's error (3d75149), on pmpp_v2 problems whose submission.py reaches bench
# (PROBLEMS, default grayscale: the longest bench, 2026-12-06-c); then KernelBench's level 1 21 and 31 for
# the time left (docs/results/2026-12-06-f/scripts/next_A.sh, KB_S seconds).
# .before/src is rung at 3ed6bb9 (`git archive 3ed6bb9 src | tar -x -C .before`). Per problem and
# version, submission.py checked twice in a workspace and cache of that version's own (cold: the
# device's ceilings measured by the first problem's check only; then warm: reference timings
# kept), RUNG_BASELINE=none RUNG_SKIP=profile as in the parity table, old and new interleaved.
# Each check's JSON is kept; bench/bench_laps.py reads where each case's time went.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
R=/tmp/laps && mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
export RUNG_BASELINE=none RUNG_SKIP=profile
P=.problem-sets/gpumode/pmpp_v2
began=$SECONDS
for p in ${PROBLEMS:-grayscale}; do
  for v in old new; do
    src=$PWD/src && [ $v = old ] && src=$PWD/.before/src
    for i in 1 2; do
      s=$SECONDS
      PYTHONPATH=$src RUNG_CACHE_DIR=/tmp/cache_$v RUNG_WORKSPACE=/tmp/ws_${v}_$p timeout 150 python3 -m rung check \
        $P/${p}_py $P/${p}_py/submission.py --json > $R/${p}_${v}_$i.json 2> $R/${p}_${v}_$i.err
      echo "$p $v check $i: $((SECONDS - s)) s" | tee -a $R/walls.txt
    done
  done
  python3 bench/bench_laps.py $R/*.json > $R/laps.md
  tar czf "$OUT/laps.tar.gz" -C /tmp laps  # after each problem: a call cut short keeps what ran
done
KB_S=$((${LIMIT:-560} - (SECONDS - began) - 20))
[ "$KB_S" -ge 120 ] && KB_S=$KB_S OUT=$OUT bash docs/results/2026-12-06-f/scripts/next_A.sh
