#!/usr/bin/env bash
# One-off device call 2, 2026-12-04: matmul spread with the profiler warmed; longer windows; ncu cache control.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 RUNG_BASELINE=none
D=${OUT:-/tmp/out}; W=/tmp/w2; mkdir -p $D $W
s=$SECONDS
for k in 1 2; do
  python3 bench/fidelity.py --only matmul --no-ncu --out $W/fid_default_$k.json > $W/fid_default_$k.log 2>&1
  RUNG_BENCH_REL_SEM=0.0001 python3 bench/fidelity.py --only matmul --no-ncu --out $W/fid_sem1e-4_$k.json > $W/fid_sem1e-4_$k.log 2>&1
  echo "round $k $((SECONDS-s)) s"
done
python3 - > $W/ncu_cache.json <<'P'
import json, sys
sys.path.insert(0, "bench")
import fidelity
out = {}
for t in ("vector_add 2^12", "vector_add 2^16", "vector_add 2^20", "softmax/tuned.py {'rows': 1024, 'cols': 4096}", "vector_add 2^24"):
    out[t] = {cc: fidelity.ncu_median_ms(t, 7, cc) for cc in ("all", "none")}
    print(t, {cc: v.get("median_ms") for cc, v in out[t].items()}, file=sys.stderr)
print(json.dumps(out, indent=1))
P
echo "ncu $((SECONDS-s)) s"
python3 - $W <<'P'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/fid_*.json')):
    for r in json.load(open(f))['rows']:
        print(f.split('/')[-1], 'cupti', [round(m*1e3,2) for m in r['rung_medians_ms']], 'events', [round(m*1e3,2) for m in r['rung_event_medians_ms']], r['rung_sm_mhz'], 'spread %.2f%%' % (r['rung_spread']*100), 'samples', r['rung_samples'], 'wall', round(r['rung_wall_s'],2))
P
tar czf $D/run2.tar.gz -C $W .
