#!/usr/bin/env bash
# Call B, at once after callA.sh on its warm machine (carry .wb; about 580 s). The CuTe DSL and
# TileLang packages unpacked; the CuTe DSL softmax's stall at 37x1000 looked at (bench/cute_probe.py
# prints every Python stack of a case that has not returned in 30 s; if it stalls, the case alone
# under compute-sanitizer's synccheck and racecheck); then issue 14's backends through the whole
# ladder, one check per solution (bench/gpu_suite.sh backends), matmul first, softmax last.
# results.tar.gz and results.md come back; the probe's and sanitizer's logs beside them.
set -uo pipefail
OUT=${OUT:-/tmp/out}
[ -f /tmp/wheels/pkgs.part.00 ] || { echo "no /tmp/wheels/pkgs.part.00: callA.sh's machine is gone"; exit 3; }
(cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh) > "$OUT/unpack.log" 2>&1 || { tail -5 "$OUT/unpack.log"; exit 1; }
PYTHONPATH=$PWD/src CUDA_LAUNCH_BLOCKING=1 timeout 60 python3 bench/cute_probe.py --problem softmax --stall 30 \
  > "$OUT/cute_softmax.log" 2>&1
probe_rc=$?
echo "cute softmax probe: exit $probe_rc"
if [ "$probe_rc" -ne 0 ]; then
  for tool in synccheck racecheck; do
    PYTHONPATH=$PWD/src timeout 60 compute-sanitizer --tool "$tool" --print-limit 20 \
      python3 bench/cute_probe.py --problem softmax --case 37x1000 --reps 1 --stall 50 >> "$OUT/cute_softmax.log" 2>&1
    echo "compute-sanitizer $tool: exit $?" | tee -a "$OUT/cute_softmax.log"
  done
fi
tail -40 "$OUT/cute_softmax.log"
STAGE_CAP_S=${STAGE_CAP_S:-150} EXAMPLES=${EXAMPLES:-"matmul vector_add softmax"} OUT=$OUT \
  timeout "$((${CALL_S:-585} - SECONDS))" bash bench/gpu_suite.sh backends
