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

import json
import os
import sys
from pathlib import Path

from rung.common.messages import SolutionStart
from rung.solution.main import readable_paths, writable_paths
from rung.solution.profile_target import injected_roots


def main(argv: list[str]) -> int:
    from rung.common import confine

    confine.die_with_parent()
    start = SolutionStart.from_dict(json.loads(Path(argv[0]).read_text()))
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # CUDA and the sanitizer's injection set up before the confinement
    confine.check_imports(writable_paths(start))
    if start.confine:
        # The sanitizer's injected thread is the sanitizer's: the solution, on this thread and
        # every thread and process it starts, is confined to its files.
        confine.confine_self(
            [*readable_paths(start), Path(argv[0]), *injected_roots(os.environ)],
            writable_paths(start),
            other_threads=True,
            scopes=False,
        )
    close_descriptors_beneath(Path(argv[0]).resolve().parent)
    os.chdir(start.scratch)  # started in a folder no solution can write; its own only once confined

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
