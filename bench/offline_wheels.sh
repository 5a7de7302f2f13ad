#!/usr/bin/env bash
# Wheels for an offline GPU host: the packages rung needs there that a CUDA image with torch,
# triton, numpy, PyYAML, typer and rich lacks, downloaded into .whl/ (git-ignored) on a machine
# with pip's index. Copy .whl/ beside the checkout on the GPU host; bench/gpu_suite.sh installs
# it into that host's own Python (the judge and the solution processes start with an environment
# built from an allow-list, so a --target folder on PYTHONPATH would not reach them).
#
#   bash bench/offline_wheels.sh             # rung's runtime dependencies, Optuna, the LLM SDKs
#   bash bench/offline_wheels.sh --kernels   # and CuTe DSL's and TileLang's packages (about 180 MB)
#
# apache-tvm-ffi is pinned to 0.1.12: with 0.1.15.post2 every TileLang 0.1.15 kernel failed to
# load on an H200 ("'tl.SwizzleMode' has no enum at string index 'NONE'").
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
platforms=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 manylinux_2_34_x86_64; do
  platforms+=(--platform "$p")
done
get() { python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl "$@"; }
get --no-deps platformdirs pydantic pydantic-core pydantic-settings annotated-types typing-inspection \
  python-dotenv typing-extensions optuna colorlog
# The llm agent's SDKs (the replay agent drives recorded conversations through them), with what
# they need.
get "anthropic>=2.16" "openai>=3.57"
if [ "${1:-}" = --kernels ]; then
  get --no-deps tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5 z3-solver==4.15.4.0 \
    nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
    nvidia-cutlass-dsl-libs-cu13==4.8.1
fi
ls .whl
