#!/usr/bin/env bash
# Call 4 (carry .wcore .problem-sets): vectoradd's submission.py checked cold, then a later
# version warm, in one workspace, with the verdict's rungs, every Python process under cProfile
# (scripts/diag/sitecustomize.py); the profiles and the two JSON reports come back as diag.tar.gz.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
P=.problem-sets/gpumode/pmpp_v2/vectoradd_py
cp $P/submission.py /tmp/v2.py && echo "# a later version" >> /tmp/v2.py
export RUNG_BASELINE=compile RUNG_SKIP=dump,trace,profile,scopes RUNG_WORKSPACE=/tmp/w RUNG_CACHE_DIR=/tmp/c
export PYTHONPATH=$PWD/docs/results/2026-12-07-d/scripts/diag:$PWD/src
mkdir -p /tmp/w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for v in cold warm; do
  rm -rf /tmp/diag && mkdir -p /tmp/diag
  s=$P/submission.py; [ $v = warm ] && s=/tmp/v2.py
  timeout 120 python3 -m rung check $P $s --json > /tmp/diag/check.json 2> /tmp/diag/check.err
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['solutions'][0]; print(sys.argv[2], [(r['name'], r['seconds']) for r in s['rungs'][:7]])" /tmp/diag/check.json $v
  mv /tmp/diag /tmp/diag_$v
done
tar czf "$OUT/diag.tar.gz" -C /tmp diag_cold diag_warm
