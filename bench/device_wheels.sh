#!/usr/bin/env bash
# The wheels of rung's runtime dependencies that the lent GPU machine's image lacks, into .whl/
# (git-ignored through .git/info/exclude), for the device tool to carry:
#
#   bash bench/device_wheels.sh            # once, on the development machine (needs pip's index)
#   run(command="python3 -m pip install -q --no-index --no-deps --no-compile --break-system-packages .whl/*.whl && ...", carry=[".whl"])
#
# They go into the image's own Python, not a --target folder on PYTHONPATH: the judge and the
# solution processes are started with an environment built from an allow-list, and knobs
# (imported in both) needs platformdirs. The image already has torch, triton, numpy, PyYAML,
# typer and rich (not the LLM SDKs); its typing-extensions is older than pydantic needs (the device tool's KINDS.md lists it).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
platforms=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_28_x86_64 manylinux_2_34_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl \
  platformdirs pydantic pydantic-core pydantic-settings annotated-types typing-inspection python-dotenv \
  typing-extensions optuna colorlog
# The llm agent's SDKs (the replay agent drives recorded conversations through them), with what
# they need that the image lacks.
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl "anthropic>=2.16" "openai>=3.57"
ls .whl
