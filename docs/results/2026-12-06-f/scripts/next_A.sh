#!/usr/bin/env bash
# Not run yet: the next session's first call (carry .wcore .problem-sets; about 560 s). The two
# KernelBench problems of the sample still without rung's rows, level 1 21 (Sigmoid) and 31 (ELU),
# 6 GiB float32 tensors each, resumed from this session's table and from KernelBench's evaluations
# already kept (level 1 21's five and 31's same.py). On a card of over 100 GB the two run as two
# streams at once; on an 80 GB card one after the other, alone on the GPU (three streams at once
# ran rung's judge out of an H100's memory in 2026-12-06-f). kb.tar.gz comes back.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .wcore/*.whl
OUT=${OUT:-/tmp/out}
HERE=docs/results/2026-12-06-f/callA
KB_S=${KB_S:-540}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
stream() {  # stream N PROBLEMS SECONDS
  mkdir -p "/tmp/kb$1"
  [ -f "/tmp/kb$1/parity.json" ] || cp "$HERE/kb/parity.json" "$HERE/kb1/kernelbench_evals.json" "/tmp/kb$1/"
  PYTHONPATH=$PWD/src:$PWD/bench timeout "$3" python3 bench/parity_kernelbench.py --batch --only "$2" \
    --max-seconds "$(($3 - 40))" --resume --out "/tmp/kb$1" > "/tmp/kb$1.log" 2>&1
}
if [ "${mib:-0}" -gt 100000 ]; then
  stream 1 level1/21 "$KB_S" &
  stream 2 level1/31 "$KB_S" &
  wait
  python3 bench/parity_table.py /tmp/kb /tmp/kb1 /tmp/kb2 > /dev/null
else
  stream 1 level1/21,level1/31 "$KB_S"
  mkdir -p /tmp/kb && cp /tmp/kb1/parity.* /tmp/kb/
fi
grep -hE "^level|stopped" /tmp/kb?.log
head -6 /tmp/kb/parity.md
tar czf "$OUT/kb.tar.gz" --exclude=solutions -C /tmp kb kb1 kb1.log $(ls -d /tmp/kb2 /tmp/kb2.log 2>/dev/null | xargs -rn1 basename)
