#!/usr/bin/env bash
# The public problem sets the verdict-parity suite judges (bench/parity_gpumode.py,
# bench/parity_kernelbench.py), fetched into .problem-sets/ (git-ignored: never committed; their
# code runs from there at evaluation time and is not copied into rung).
#
#   bash bench/fetch_problem_sets.sh            # from the repository root; needs network and git
#
# Pinned to the commits the suite was written against; set GPUMODE_COMMIT or KERNELBENCH_COMMIT
# to judge others, GPUMODE_URL or KERNELBENCH_URL to clone from a mirror (a local path works). What it keeps (about 1.5 MB, small enough to travel to a GPU machine):
#   .problem-sets/gpumode/pmpp_v2/            eval.py, utils.py, template.py, every problem folder
#   .problem-sets/gpumode/pmpp_v2.yaml
#   .problem-sets/kernelbench/KernelBench/level1, level2    the problem files
#   .problem-sets/kernelbench/src/kernelbench/              __init__, eval, timing, utils, dataset
set -euo pipefail

GPUMODE_COMMIT=${GPUMODE_COMMIT:-f83cb92a534cc67fa98d7e9813e7f8238abdb4e0}
KERNELBENCH_COMMIT=${KERNELBENCH_COMMIT:-423217d9fda91e0c2d67e4a43bf62f96f6d104f1}
DEST=${DEST:-.problem-sets}

clone_at() {  # URL COMMIT DIR: a blobless clone checked out at COMMIT
  git clone --quiet --filter=blob:none --no-checkout "$1" "$3"
  git -C "$3" checkout --quiet "$2"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clone_at "${GPUMODE_URL:-https://github.com/gpu-mode/reference-kernels}" "$GPUMODE_COMMIT" "$tmp/gpumode"
clone_at "${KERNELBENCH_URL:-https://github.com/ScalingIntelligence/KernelBench}" "$KERNELBENCH_COMMIT" "$tmp/kernelbench"

rm -rf "$DEST/gpumode" "$DEST/kernelbench"
mkdir -p "$DEST/gpumode" "$DEST/kernelbench/src/kernelbench" "$DEST/kernelbench/KernelBench"
cp -r "$tmp/gpumode/problems/pmpp_v2" "$tmp/gpumode/problems/pmpp_v2.yaml" "$DEST/gpumode/"
cp -r "$tmp/kernelbench/KernelBench/level1" "$tmp/kernelbench/KernelBench/level2" "$DEST/kernelbench/KernelBench/"
for f in __init__ eval timing utils dataset; do
  cp "$tmp/kernelbench/src/kernelbench/$f.py" "$DEST/kernelbench/src/kernelbench/"
done
cp "$tmp/kernelbench/LICENSE" "$DEST/kernelbench/"
echo "$GPUMODE_COMMIT gpu-mode/reference-kernels" > "$DEST/COMMITS"
echo "$KERNELBENCH_COMMIT ScalingIntelligence/KernelBench" >> "$DEST/COMMITS"
du -sh "$DEST"
