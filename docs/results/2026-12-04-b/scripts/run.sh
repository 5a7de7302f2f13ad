#!/usr/bin/env bash
# One-off device call, 2026-12-04: evict_first A/B, matmul spread vs warm-up, ncu cache-control.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 RUNG_BASELINE=none RUNG_SKIP=profile
export RUNG_CACHE_DIR=/tmp/rc RUNG_WORKSPACE=/tmp/ws
D=${OUT:-/tmp/out}; mkdir -p $D /tmp/ws
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > $D/gpu.txt
s=$SECONDS
python3 -m rung check problems/softmax problems/softmax/solutions/correct/naive.py problems/softmax/solutions/correct/tuned.py scratch/softmax_noevict.py scratch/softmax_noevict_w64.py --json > $D/ab_softmax.json 2> $D/ab_softmax.err
echo "softmax ab $((SECONDS-s)) s"; s=$SECONDS
python3 -m rung check problems/layer_norm problems/layer_norm/solutions/correct/naive.py problems/layer_norm/solutions/correct/tuned.py scratch/layer_norm_noevict.py --json > $D/ab_layer_norm.json 2> $D/ab_layer_norm.err
echo "layer_norm ab $((SECONDS-s)) s"; s=$SECONDS
for w in 0.1 2; do
  sleep 20
  RUNG_BENCH_WARMUP_S=$w python3 bench/fidelity.py --only matmul $([ $w = 2 ] && echo --no-ncu) --out $D/fid_matmul_w$w.json > $D/fid_matmul_w$w.log 2>&1
  echo "matmul warmup $w: $((SECONDS-s)) s"; s=$SECONDS
done
for cc in all none; do
  k=0
  for t in "vector_add 2^12" "vector_add 2^20" "softmax/tuned.py {'rows': 1024, 'cols': 4096}"; do
    k=$((k+1))
    ncu --clock-control none --cache-control $cc --metrics gpu__time_duration.sum --csv --page raw --nvtx --nvtx-include rung_target/ \
      python3 bench/fidelity.py --target "$t" --launches 7 > "$D/ncu_${cc}_$k.csv" 2>/dev/null
    echo "== $cc $t"; grep -o '"[0-9.,]*"$' "$D/ncu_${cc}_$k.csv" | tr '\n' ' '; echo
  done
done
echo "ncu $((SECONDS-s)) s"
python3 - $D <<'P'
import json,sys,glob
for f in sorted(glob.glob(sys.argv[1]+'/ab_*.json')):
    for s in json.load(open(f))['solutions']:
        for r in s['rungs']:
            if r['name']=='bench' and isinstance(r.get('metrics'),dict) and 'cases' in r['metrics']:
                print(s['path'].split('/')[-1], [round(c['median_ms']*1e3,1) for c in r['metrics']['cases']])
            if r['name'] in ('compile','correct','roofline'): print('  ',r['name'],r['status'],r['message'][:200])
for f in sorted(glob.glob(sys.argv[1]+'/fid_*.json')):
    for r in json.load(open(f))['rows']:
        print(f, [round(m*1e3,2) for m in r['rung_medians_ms']], r['rung_sm_mhz'], round(r['rung_spread']*100,2), r.get('ncu',{}).get('median_ms'))
P
