"""The program Nsight Compute profiles: one call of the solution on one benchmark case.

    python -m rung.worker.profile_target HELLO_JSON CASE_INDEX

Run under ncu by the profile rung, in a process of its own with the worker's environment (no
secrets). Two calls warm up (JIT, autotuning, first-touch allocations) outside the NVTX range;
the third runs inside it, so ncu profiles exactly the kernels of one call. Exits 0 when that
call returned; a solution that raises exits 1 with the traceback on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rung.ncu import NVTX_RANGE
from rung.worker.main import die_with_parent


def main(argv: list[str]) -> int:
    die_with_parent()
    hello = json.loads(Path(argv[0]).read_text())
    from rung.worker.session import Session, configure_process

    configure_process(0, interpret=False)
    import torch

    session = Session(hello)
    case = session.problem.benchmarks[int(argv[1])]
    inputs = session.inputs(case, session.seed)
    for _ in range(2):
        session.call(inputs)
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    session.call(inputs)
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
