#!/usr/bin/env bash
# Everything rung measures on a GPU, in one call: the `gpu` tests, every example problem through
# the whole ladder, time-to-verdict, (with --fidelity) the fidelity benchmark under ncu, and
# (with --tune) the tune agent from the naive vector add and softmax, to compare with the tuned.
# Writes a results table and the raw JSON to $OUT (default ./results).
#
#   bash bench/gpu_suite.sh [--fidelity] [--only-fidelity] [--tune]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results}
WORK=${WORK:-/tmp/rung-suite}
mkdir -p "$OUT" "$WORK"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export RUNG_CACHE_DIR="$WORK/cache" RUNG_WORKSPACE="$WORK/ws"
mode=${1:-}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.default_applications.graphics --format=csv \
  | tee "$WORK/gpu.txt"
python3 -m rung device --json > "$WORK/device.json" && cp "$WORK/device.json" "$OUT/"

if [ "$mode" != "--only-fidelity" ] && [ "$mode" != "--tune" ]; then
  python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee "$OUT/gpu_tests.log"
  for p in problems/*/; do
    name=$(basename "$p")
    # torch.compile costs tens of seconds per shape: the baseline is timed beside the tuned versions only.
    # Nsight Compute (the profile rung) likewise: on the tuned versions only.
    RUNG_BASELINE=none RUNG_SKIP=profile python3 -m rung check "$p" "$p"solutions/correct/naive.py "$p"solutions/correct/torch*.py \
      --json > "$WORK/check_${name}_other.json"
    python3 -m rung check "$p" "$p"solutions/correct/tuned.py --json > "$WORK/check_${name}_tuned.json"
    echo "checked $name"
  done
  # Time to verdict: a second climb of the tuned softmax (warm caches, compiled kernels), no baseline.
  RUNG_BASELINE=none RUNG_SKIP=profile python3 -m rung check problems/softmax problems/softmax/solutions/correct/tuned.py --json \
    > "$WORK/ttv_softmax.json"
  RUNG_BASELINE=none RUNG_SKIP=profile python3 -m rung check problems/softmax problems/softmax/solutions/correct/tuned.py --json \
    > "$WORK/ttv_softmax.json"
fi
if [ "$mode" = "--fidelity" ] || [ "$mode" = "--only-fidelity" ]; then
  python3 bench/fidelity.py --out "$WORK/fidelity.json" && cp "$WORK/fidelity.json" "$OUT/"
fi
if [ "$mode" = "--tune" ]; then
  # Every TUNE combination of the naive versions (the plateau rule off: this is a search).
  for name in vector_add softmax; do
    RUNG_BASELINE=none RUNG_SKIP=profile python3 -m rung optimize "problems/$name" --agent tune \
      --from "problems/$name/solutions/correct/naive.py" --parallel 4 --rounds 10 --plateau 100 --json \
      > "$WORK/tune_$name.json"
    RUNG_BASELINE=none python3 -m rung check "problems/$name" "problems/$name/solutions/correct/tuned.py" --json \
      > "$WORK/check_${name}_tuned.json"
    cp "$WORK/tune_$name.json" "$OUT/"
  done
fi
python3 bench/report.py "$WORK" | tee "$OUT/results.md"
python3 - "$WORK" "$OUT/checks.json" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
merged = {p.stem: json.loads(p.read_text()) for p in sorted(work.glob("check_*.json")) if p.stat().st_size}
pathlib.Path(sys.argv[2]).write_text(json.dumps(merged))
PY
