#!/usr/bin/env bash
# Everything rung measures on a GPU, in one run, stage by stage:
#
#   tests     the `gpu` tests (tests/test_gpu.py: the other test files need the dev extras)
#   examples  every example problem through the whole ladder (profile rung on the tuned versions)
#   ttv       time to verdict: a second climb of the tuned softmax (warm caches), no baseline
#   noise     where short kernels' event samples get their heavy tail (bench/event_noise.py)
#   gpumode   rung's verdicts and medians against GPU MODE's own evaluation (bench/gpumode_agreement.py)
#   fidelity  rung's timing against ncu, do_bench and the plain protocol (bench/fidelity.py)
#   tune      the tune agent from the naive softmax and vector add, against the tuned versions
#   backends  every CUDA C++, CuTe DSL and TileLang example, right and wrong, each through the
#             whole ladder in a check of its own (the cap is per check); then the same sources
#             built again (compile and dump only): the build cache
#   agents    the optimize loop judged by numbers (bench/agent_eval.py), no key: recorded
#             tool-using conversations (replay) and Optuna (tune) from each naive version
#   overhead  what dump and trace add to a check of each tuned example (bench/ladder_overhead.py)
#   throughput  candidates per minute on this GPU through the local executor (bench/throughput.py)
#
#   bash bench/gpu_suite.sh [STAGE ...]        (default: tests examples ttv gpumode)
#
# Results (JSON per run, logs, results.md from bench/report.py) are written to $WORK/results
# and, as each stage ends, packed into results.tar.gz beside a copy of results.md in the caller's
# $OUT (default ./results), so a run cut short keeps what finished. Each stage has a time cap (STAGE_CAP_S, default 480 s).
# EXAMPLES="softmax matmul" limits the examples stage to those;
# FIDELITY_ONLY="matmul" the fidelity stage to the kernels whose name holds it;
# TUNE="vector_add" the tune stage, TUNE_ROUNDS (default 10, 4 candidates a round) its budget.
# AGENT_PROBLEMS="softmax matmul" limits the agents stage (default every problem; a problem's
# replay climbs each shipped version twice, compile and check: split problems over calls);
# AGENT_ROUNDS (default 6) its round budget, AGENTS="tune" its agents. OVERHEAD="softmax matmul" limits the overhead stage
# (default every problem with a tuned version); THROUGHPUT_COUNT (default 32) the batch.
# The torch.compile baseline is off throughout (RUNG_BASELINE=none): compiling every shape costs
# minutes; `rung check` times it by default.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${OUT:-$PWD/results}
WORK=${WORK:-/tmp/rung-suite}
OUT=$WORK/results
CAP=${STAGE_CAP_S:-480}
mkdir -p "$DEST" "$OUT"
# Wheels for an offline GPU host in .whl (bench/offline_wheels.sh) go into its own Python: the judge
# and the solution processes do not inherit PYTHONPATH's extra folders.
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl || exit 1
fi
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1
export RUNG_CACHE_DIR="$WORK/cache" RUNG_WORKSPACE="$WORK/ws" RUNG_BASELINE=none
stages=${*:-tests examples ttv gpumode}
capped() { timeout --kill-after=10 "$CAP" "$@"; }
pack() {
  python3 bench/report.py "$OUT" > "$OUT/results.md"
  tar czf "$DEST/results.tar.gz" -C "$OUT" . && cp "$OUT/results.md" "$DEST/"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.default_applications.graphics --format=csv \
  | tee "$OUT/gpu.txt"
python3 -m rung device --json > "$OUT/device.json"

for stage in $stages; do
  began=$SECONDS
  case $stage in
    tests)
      capped python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py > "$OUT/gpu_tests.log" 2>&1
      tail -3 "$OUT/gpu_tests.log" ;;
    examples)
      for name in ${EXAMPLES:-$(ls problems)}; do
        p=problems/$name/
        RUNG_SKIP=profile capped python3 -m rung check "$p" "$p"solutions/correct/naive.py "$p"solutions/correct/torch*.py \
          --json > "$OUT/check_${name}_other.json"
        capped python3 -m rung check "$p" "$p"solutions/correct/tuned.py --json > "$OUT/check_${name}_tuned.json"
        echo "checked $name"
      done ;;
    ttv)
      for _ in 1 2; do
        RUNG_SKIP=profile capped python3 -m rung check problems/softmax problems/softmax/solutions/correct/tuned.py \
          --json > "$OUT/ttv_softmax.json"
      done ;;
    noise)
      capped python3 bench/event_noise.py --out "$OUT/event_noise.json" > "$OUT/event_noise.log" 2>&1 ;;
    gpumode)
      capped python3 bench/gpumode_agreement.py --out "$OUT/gpumode.json" > "$OUT/gpumode.log" 2>&1
      tail -12 "$OUT/gpumode.log" ;;
    fidelity)
      capped python3 bench/fidelity.py --only "${FIDELITY_ONLY:-}" --out "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1 ;;
    tune)
      # TUNE combinations of the naive versions (the plateau rule off: this is a search).
      for name in ${TUNE:-softmax vector_add}; do
        RUNG_SKIP=profile capped python3 -m rung optimize "problems/$name" --agent tune \
          --from "problems/$name/solutions/correct/naive.py" --parallel 4 --rounds "${TUNE_ROUNDS:-10}" --plateau 100 --json \
          > "$OUT/tune_$name.json"
        [ -s "$OUT/check_${name}_tuned.json" ] || RUNG_SKIP=profile capped python3 -m rung check "problems/$name" \
          "problems/$name/solutions/correct/tuned.py" --json > "$OUT/check_${name}_tuned.json"
        pack
      done ;;
    backends)
      for name in ${EXAMPLES:-vector_add softmax matmul prefix_sum}; do
        p=problems/$name/
        files=$(ls "$p"solutions/correct/{cuda,cute,tilelang}*.py "$p"solutions/wrong/{cuda,cute,tilelang}_*.py 2>/dev/null)
        [ -n "$files" ] || continue
        # A check of its own per solution, packed as it ends: a cap or the run's end cuts one
        # solution's verdict, not the example's.
        for f in $files; do
          capped python3 -m rung check "$p" "$f" --json > "$OUT/check_${name}_$(basename "$f" .py)_backends.json"
          pack
        done
        # shellcheck disable=SC2086
        RUNG_SKIP=run,guard,correct,scale,bench,roofline,trace,profile capped python3 -m rung check "$p" $files \
          --json > "$OUT/cached_${name}_backends.json"
        echo "checked $name's backends"
        pack
      done ;;
    agents)
      for agent in ${AGENTS:-replay tune}; do
        # shellcheck disable=SC2086
        RUNG_SKIP=profile capped python3 bench/agent_eval.py --agent "$agent" --problems ${AGENT_PROBLEMS:-} \
          --rounds "${AGENT_ROUNDS:-6}" --parallel "$([ "$agent" = tune ] && echo 4 || echo 1)" \
          --out "$OUT/agent_eval_$agent" > "$OUT/agent_eval_$agent.log" 2>&1
        tail -9 "$OUT/agent_eval_$agent.log"
        pack
      done ;;
    overhead)
      # shellcheck disable=SC2086
      capped python3 bench/ladder_overhead.py --out "$OUT/ladder_overhead.json" --problems ${OVERHEAD:-} --pairs 2 \
        | tee "$OUT/ladder_overhead.log" ;;
    throughput)
      capped python3 bench/throughput.py --workers 1 --count "${THROUGHPUT_COUNT:-32}" --out "$OUT/throughput" \
        > "$OUT/throughput.log" 2>&1
      tail -6 "$OUT/throughput.log" ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
  echo "stage $stage: $((SECONDS - began)) s" | tee -a "$OUT/stages.txt"
  pack
done
cat "$OUT/results.md"
