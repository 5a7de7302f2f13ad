#!/usr/bin/env bash
# Call 4 (same machine; carry .snap): call 3's TileLang runs as JSON; the CuTe DSL softmax (cut at
# 60 s, after guard); the gpu tests.
cd .snap && export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 RUNG_CACHE_DIR=/tmp/suite/cache RUNG_BASELINE=none
for p in vector_add softmax matmul; do for r in 1 2 3; do
  RUNG_WORKSPACE=/tmp/tl/$p timeout 20 python3 -m rung show $r --json > $OUT/tl_${p}_$r.json 2>/dev/null
done; done
RUNG_WORKSPACE=/tmp/cs timeout 60 python3 -m rung check problems/softmax problems/softmax/solutions/correct/cute.py 2>&1 | tail -12
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -6
