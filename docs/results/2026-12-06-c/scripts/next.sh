#!/usr/bin/env bash
# For the next GPU sessions (carry .whl and .problem-sets): the rest of KernelBench's parity
# sample, level 1 11 first (the guard's memory since this session's run), a few problems a call
# (about 160 s a problem: five solutions, KernelBench's own eval of each, rung cold, warm and in
# the loop). Each call's table lands in its own folder; pick the call by its number:
#
#   bash docs/results/2026-12-06-c/scripts/next.sh 1      # then 2, 3, 4
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl
OUT=${OUT:-/tmp/out}
case ${1:-1} in
  1) only=level1/11,level1/21,level1/31 ;;
  2) only=level1/41,level1/51,level1/61 ;;
  3) only=level1/71,level1/81,level1/91 ;;
  4) only=level2/1,level2/21,level2/41 ;;
  5) only=level2/61,level2/81 ;;
  laps)  # where a warm check's bench time goes on GPU MODE's grayscale (11.4 s of 18.2 s warm)
    export PYTHONPATH=$PWD/src RUNG_BASELINE=none RUNG_SKIP=profile RUNG_WORKSPACE=/tmp/ws
    for i in 1 2; do
      python3 -m rung check .problem-sets/gpumode/pmpp_v2/grayscale_py \
        .problem-sets/gpumode/pmpp_v2/grayscale_py/submission.py --json > "$OUT/grayscale_check$i.json"
    done
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); b=[r for r in d['solutions'][0]['rungs'] if r['name']=='bench'][0]; [print(c['case'], c['wall_s']) for c in b['metrics']['cases']]" "$OUT/grayscale_check2.json"
    exit 0 ;;
  *) echo "call 1..5 or laps" >&2; exit 2 ;;
esac
mkdir -p "$OUT/k$1"
PYTHONPATH=$PWD/src:$PWD/bench timeout 570 python3 bench/parity_kernelbench.py --only "$only" \
  --max-seconds 540 --out "$OUT/k$1" | tail -30
