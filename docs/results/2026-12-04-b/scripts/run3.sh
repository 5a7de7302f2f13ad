#!/usr/bin/env bash
# One-off device call 3, 2026-12-04: the loaded warm-up; CUPTI window; time to verdict; gpu tests.
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH="$PWD/src:$PWD:/tmp/site" PYTHONUNBUFFERED=1 RUNG_BASELINE=none RUNG_CACHE_DIR=/tmp/rc RUNG_WORKSPACE=/tmp/ws
D=${OUT:-/tmp/out}; W=/tmp/w3; mkdir -p $D $W /tmp/ws
s=$SECONDS
for k in 1 2 3; do
  python3 bench/fidelity.py --only matmul --no-ncu --out $W/fid_loaded_$k.json > $W/fid_loaded_$k.log 2>&1
  python3 -c "
import runpy, sys
sys.path.insert(0, 'src')
import rung.rungs.bench as b
b.CUPTI_MAX_CALLS = 1000
sys.argv = ['bench/fidelity.py', '--only', 'matmul', '--no-ncu', '--out', '$W/fid_loaded_cupti1000_$k.json']
runpy.run_path('bench/fidelity.py', run_name='__main__')" > $W/fid_loaded_cupti1000_$k.log 2>&1
  echo "round $k $((SECONDS-s)) s"
done
for k in 1 2; do
  RUNG_SKIP=profile python3 -m rung check problems/softmax problems/softmax/solutions/correct/tuned.py --json > $W/ttv_$k.json
done
echo "ttv $((SECONDS-s)) s"
python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py > $W/gpu_tests.log 2>&1; tail -3 $W/gpu_tests.log
echo "tests $((SECONDS-s)) s"
python3 - $W <<'P'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/fid_*.json')):
    for r in json.load(open(f))['rows']:
        print(f.split('/')[-1], 'cupti', [round(m*1e3,2) for m in r['rung_medians_ms']], 'events', [round(m*1e3,2) for m in r['rung_event_medians_ms']], r['rung_sm_mhz'], 'spread %.2f%%' % (r['rung_spread']*100), 'samples', r['rung_samples'], 'wall', round(r['rung_wall_s'],2))
for f in sorted(glob.glob(sys.argv[1]+'/ttv_*.json')):
    s = json.load(open(f))['solutions'][0]
    print(f.split('/')[-1], s['verdict'], {r['name']: r.get('seconds') for r in s['rungs']})
P
tar czf $D/run3.tar.gz -C $W .
