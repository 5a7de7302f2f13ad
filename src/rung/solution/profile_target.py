"""The program Nsight Compute profiles: one call of the solution on inputs the judge saved.

    python -m rung.solution.profile_target START_JSON INPUTS_PT

A solution process like any other (it confines itself the same way before importing the
solution), run under ncu by the profile rung. Two calls warm up (JIT, autotuning, first-touch
allocations) outside the NVTX range; the third runs inside it, so ncu profiles exactly the
kernels of one call. Exits 0 when that call returned; a solution that raises exits 1 with the
traceback on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rung.common.messages import SolutionStart
from rung.ncu import NVTX_RANGE
from rung.solution.main import readable_paths, writable_paths


def main(argv: list[str]) -> int:
    from rung import confine

    confine.die_with_parent()
    start = SolutionStart.from_dict(json.loads(Path(argv[0]).read_text()))
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # CUDA and ncu's injection set up before the confinement
    if start.confine:
        # ncu's injected library runs a thread of its own, set up at CUDA's start and reaching
        # this process through signals and an abstract socket: the solution, on this thread and
        # every thread and process it starts, is confined to its files; ncu's thread is ncu's.
        confine.confine_self(
            [*readable_paths(start), Path(argv[0])],
            [*writable_paths(start), Path("/tmp")],
            other_threads=True,
            scopes=False,
        )

    from rung.solution.harness import Harness

    harness = Harness(start)
    inputs = torch.load(argv[1], weights_only=True)
    for _ in range(2):
        harness.entry(*inputs)
        harness.sync()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    harness.entry(*inputs)
    harness.sync()
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
