"""The program compute-sanitizer checks: one call of the solution on each input set the judge saved.

    python -m rung.solution.memcheck_target START_JSON INPUTS_PT

A solution process like any other, run under `compute-sanitizer --tool memcheck` by the memcheck
rung. It confines itself as the profile target does under Nsight Compute, whose injection works
the same way: the tool injects a library that starts with CUDA, keeps a thread of its own and
reaches its front end from it, so CUDA starts before the confinement, the injected library's
install folder stays readable, and signals and abstract sockets are left open (the rules ncu
needed; not yet run under compute-sanitizer on a GPU). A descriptor of a file in the judge's
folder that the process inherited (the tool's report, were the front end to pass it on) is
closed before the solution is imported: the report is the tool's to write. INPUTS_PT holds a
list of input tuples (the smallest test cases); each is called once and synchronised, so the
tool sees every kernel of every call. Nothing here decides anything: the sanitizer writes its
report into a folder of the judge's, which this process cannot write; what this process prints
goes to another file. Exits 0 when every call returned; a solution that raises exits 1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rung.solution.profile_target import enter_under_tool


def main(argv: list[str]) -> int:
    judges = Path(argv[0]).resolve().parent  # resolved before the target enters its scratch folder
    start = enter_under_tool(Path(argv[0]), [])
    close_descriptors_beneath(judges)
    import torch

    from rung.solution.harness import Harness

    harness = Harness(start)
    cases = torch.load(argv[1], weights_only=True)
    for inputs in cases:
        harness.entry(*inputs)
        harness.sync()
    return 0


def close_descriptors_beneath(folder: Path) -> list[int]:
    """Close every descriptor of this process open on a file beneath `folder`, but its stdin,
    stdout and stderr (the judge points stdout at a file there of the target's own); return them."""
    closed = []
    for name in os.listdir("/proc/self/fd"):
        if int(name) <= 2:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, gone already
            continue
        if target.startswith(f"{folder}/"):
            os.close(int(name))
            closed.append(int(name))
    return closed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
