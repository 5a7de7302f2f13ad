#!/usr/bin/env bash
# Call 3: the last wheel part; CuTe DSL and TileLang installed into the image's Python (the
# solution process does not inherit PYTHONPATH); their builds warmed in parallel, compile-only;
# then the backends stage of bench/gpu_suite.sh on the examples.
set -u
mkdir -p /tmp/wheels && cp .w3/* /tmp/wheels/
cat /tmp/wheels/cu13.part.0* > /tmp/wheels/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && rm /tmp/wheels/cu13.part.0*
sha256sum /tmp/wheels/nvidia_cutlass_dsl_libs_cu13*.whl | cut -c1-16
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages /tmp/wheels/*.whl 2>&1 | tail -3
python3 -c "import tilelang, cutlass; print('tilelang', tilelang.__version__, 'cutlass ok')"
cd .snap
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 WORK=/tmp/suite
export RUNG_CACHE_DIR=/tmp/suite/cache RUNG_BASELINE=none
mkdir -p /tmp/suite "$OUT/prebuild"
began=$SECONDS
for f in problems/*/solutions/correct/{cute,tilelang}*.py; do
  p=${f%%/solutions/*}; n=$(basename "$p")_$(basename "$f" .py)
  RUNG_WORKSPACE=/tmp/pre/$n RUNG_SKIP=bench,roofline,trace,profile timeout 300 python3 -m rung check "$p" "$f" > "$OUT/prebuild/$n.txt" 2>&1 &
done
wait
echo "prebuild: $((SECONDS - began)) s"; grep -h "PASS\|FAIL\|ERROR\|SKIPPED at" "$OUT"/prebuild/*.txt | head -20
STAGE_CAP_S=${CAP:-300} EXAMPLES="${EXAMPLES:-matmul prefix_sum vector_add softmax}" bash bench/gpu_suite.sh backends
