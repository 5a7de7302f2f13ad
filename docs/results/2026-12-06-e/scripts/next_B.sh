#!/usr/bin/env bash
# Not run yet: the next session's second call, at once after next_A.sh on its warm machine
# (carry .wb). The CuTe DSL and TileLang packages unpacked; then issue 14's backends through the
# whole ladder, each solution in a check of its own (bench/gpu_suite.sh backends), matmul first.
# results.tar.gz and results.md come back; the probe's log beside them.
set -uo pipefail
OUT=${OUT:-/tmp/out}
[ -f /tmp/wheels/pkgs.part.00 ] || { echo "no /tmp/wheels/pkgs.part.00: next_A.sh's machine is gone"; exit 3; }
(cp .wb/* /tmp/wheels/ && bash bench/unpack_wheels.sh) > "$OUT/unpack.log" 2>&1 || { tail -5 "$OUT/unpack.log"; exit 1; }
STAGE_CAP_S=${STAGE_CAP_S:-150} EXAMPLES=${EXAMPLES:-"matmul vector_add softmax"} OUT=$OUT \
  timeout "${BACKENDS_S:-560}" bash bench/gpu_suite.sh backends
