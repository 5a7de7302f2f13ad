"""The program the scopes rung runs: one call of the solution with its Triton kernels traced
inside by proton (instrumentation mode), on inputs the judge saved.

    python -m rung.solution.scopes_target START_JSON INPUTS_PT OUT_DIR

A solution process like any other, confined the same way before torch or the solution is
imported. Kernels that mark no scope of their own get scopes around their phases
(`scope_marks`). Two calls warm up (JIT, autotuning) with proton off, so autotuning never runs
instrumented; then proton's instrumentation backend is started, one call runs (its kernels are
built again, instrumented), and proton writes `OUT_DIR/scopes.chrome_trace`, with `marks.json`
saying what was marked. Nothing here decides anything: the judge reads the trace as figures to
show, never as a verdict. Exits 0 when the call returned; a solution that raises exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rung.common.messages import SolutionStart
from rung.solution.main import readable_paths, writable_paths

TRACE = "scopes"  # proton adds .chrome_trace


def main(argv: list[str]) -> int:
    from rung.common import confine

    confine.die_with_parent()
    start = SolutionStart.from_dict(json.loads(Path(argv[0]).read_text()))
    out = Path(argv[2])
    confine.check_imports(writable_paths(start))
    if start.confine:
        confine.confine_self([*readable_paths(start), Path(argv[0])], writable_paths(start))
    os.chdir(start.scratch)  # started in a folder no solution can write; its own only once confined
    import torch
    import triton.profiler as proton
    import triton.profiler.language as proton_language

    from rung.solution.harness import Harness
    from rung.solution.scope_marks import mark_phases

    proton_language.enable_semantic("triton")  # off by default: Triton kernels are marked here
    harness = Harness(start)
    inputs = torch.load(argv[1], weights_only=True)
    marks = mark_phases(harness.module, harness.source.read_text())
    (out / "marks.json").write_text(json.dumps(marks))
    for _ in range(2):
        harness.entry(*inputs)
        harness.sync()
    proton.start(str(out / TRACE), backend="instrumentation", data="trace")
    harness.entry(*inputs)
    harness.sync()
    proton.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
