#!/usr/bin/env bash
# Call A, planned as 2026-12-06-e's next_A.sh (carry .wa .wcore .problem-sets; about 540 s). rung's runtime
# wheels; the first half of the CuTe DSL / TileLang packages left in /tmp/wheels for callB.sh;
# then the KernelBench problems of the sample still to judge, in three streams at once, each
# resumed from the 2026-12-06-e table (its rows are skipped), joined into one table at the end.
# Everything comes back in kb.tar.gz (the device tool returns 8 files at most).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
mkdir -p /tmp/wheels && cp .wa/* /tmp/wheels/
OUT=${OUT:-/tmp/out}
SEED=docs/results/2026-12-06-e/kb_streams12/parity.json
KB_S=${KB_S:-530}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
# Two of KernelBench's evaluations at once for the 6 GiB problems where the GPU has room (one held
# 43 GiB on the H100 on 2026-12-06-d): on an H200, not on an 80 GB card.
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
OWN_JOBS=$([ "${mib:-0}" -gt 100000 ] && echo 2 || echo 1)
stream() {
  mkdir -p "/tmp/kb$1" && { [ -f "/tmp/kb$1/parity.json" ] || cp "$SEED" "/tmp/kb$1/"; }
  PYTHONPATH=$PWD/src:$PWD/bench timeout "$KB_S" python3 bench/parity_kernelbench.py --batch --only "$2" \
    --max-seconds "$((KB_S - 50))" --resume --own-jobs "${3:-1}" --out "/tmp/kb$1" > "/tmp/kb$1.log" 2>&1
}
stream 1 level1/21,level1/31 "$OWN_JOBS" &
stream 2 level1/61,level1/71,level2/1 &
stream 3 level2/21,level2/41,level2/61,level2/81 &
wait
python3 bench/parity_table.py /tmp/kb /tmp/kb1 /tmp/kb2 /tmp/kb3 > /dev/null
grep -hE "^level|stopped" /tmp/kb?.log
head -6 /tmp/kb/parity.md
tar czf "$OUT/kb.tar.gz" -C /tmp kb kb1 kb2 kb3 kb1.log kb2.log kb3.log
