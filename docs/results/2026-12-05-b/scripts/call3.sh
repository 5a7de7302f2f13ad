#!/usr/bin/env bash
# Call 3 (same machine; carry .snap .wc): apache-tvm-ffi 0.1.12, the version tilelang 0.1.15 was
# built against here (0.1.15.post2 failed every TileLang load: "'tl.SwizzleMode' has no enum at
# string index 'NONE'"); the ncu report of call 1 read through ncu_report; the TileLang examples.
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages --upgrade .wc/*.whl 2>&1 | tail -2
cd .snap && export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 RUNG_CACHE_DIR=/tmp/suite/cache RUNG_BASELINE=none
timeout 100 python3 -c "
import sys; sys.argv=['x']; sys.path.insert(0,'bench')
import capture_artifacts as c, pathlib
c.dump_report(pathlib.Path('/tmp/r/artifacts/ncu/softmax_full.ncu-rep'), pathlib.Path('$OUT'))
" 2>&1 | tail -5
for p in vector_add softmax matmul; do
  f=$(ls problems/$p/solutions/correct/tilelang*.py problems/$p/solutions/wrong/tilelang_*.py 2>/dev/null)
  RUNG_WORKSPACE=/tmp/tl/$p timeout 130 python3 -m rung check problems/$p $f 2>&1 | grep -v "^  " | tail -14
done
