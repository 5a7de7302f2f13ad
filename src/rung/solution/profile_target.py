"""The program Nsight Compute profiles: one call of the solution on inputs the judge saved.

    python -m rung.solution.profile_target START_JSON INPUTS_PT OUTPUTS_BIN

A solution process like any other (it confines itself the same way before importing the
solution), run under ncu by the profile rung. Two calls warm up (JIT, autotuning, first-touch
allocations) outside the NVTX range; the third runs inside it, so ncu profiles exactly the
kernels of one call. That call's outputs are then written, byte for byte, to OUTPUTS_BIN (a new
file in the scratch folder) for the judge to compare with the reference
(`rung.judge.profiled_call`): a solution that does less work under Nsight Compute gives a wrong
answer there. Exits 0 when that call returned; a solution that raises exits 1 with the
traceback on stderr. Without CUDA (the CPU tests' stand-in ncu) there is no NVTX range to open.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rung.common.messages import SolutionStart
from rung.common.ncu import NVTX_RANGE
from rung.common.safe_files import open_new
from rung.solution.main import readable_paths, writable_paths


def main(argv: list[str]) -> int:
    start = enter_under_tool(Path(argv[0]), ncu_locks())
    import torch

    from rung.solution.harness import Harness

    harness = Harness(start)
    inputs = torch.load(argv[1], weights_only=True)
    for _ in range(2):
        harness.entry(*inputs)
        harness.sync()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.nvtx.range_push(NVTX_RANGE)
    value = harness.entry(*inputs)
    harness.sync()
    if cuda:
        torch.cuda.nvtx.range_pop()
    write_outputs(value, Path(argv[2]))
    return 0


def enter_under_tool(start_json: Path, writable: list[Path]) -> SolutionStart:
    """Set this target up as a solution process under a tool that injects a library into it
    (Nsight Compute, compute-sanitizer), then confine it and enter its scratch folder; the
    solution is not imported yet. The injected library runs a thread of its own, set up at CUDA's
    start and reaching this process through signals and an abstract socket, and reads its install
    folder: so CUDA starts before the confinement, that folder stays readable (`injected_roots`),
    and the solution, on this thread and every thread and process it starts, is confined to its
    files; the tool's thread is the tool's. `writable`: what the tool must write besides."""
    from rung.common import confine

    confine.die_with_parent()
    start = SolutionStart.from_dict(json.loads(start_json.read_text()))
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # CUDA and the tool's injection set up before the confinement
    confine.check_imports(writable_paths(start))
    if start.confine:
        confine.confine_self(
            [*readable_paths(start), start_json, *injected_roots(os.environ)],
            [*writable_paths(start), *writable],
            other_threads=True,
            scopes=False,
        )
    os.chdir(start.scratch)  # started in a folder no solution can write; its own only once confined
    return start


def write_outputs(value: Any, path: Path) -> None:
    """The bytes of every tensor `value` holds, in order, each laid out contiguously, in the new
    file `path`; nothing else (the judge decides their shapes and what they should be)."""
    import torch

    from rung.common.trees import tensor_list

    with open_new(path) as f:
        for t in tensor_list(value) or []:
            flat = t.detach().contiguous().cpu().reshape(-1)
            f.write(flat.view(torch.uint8).numpy().data)


def injected_roots(environ: Mapping[str, str]) -> list[Path]:
    """The install folders of the libraries a profiler injected into this process, read from
    the environment it started with (ncu names its injection library there): ncu loads more of
    its libraries and its metric tables from that folder while it profiles. The folder is the
    one above the library's `target` folder where there is one (ncu's layout), else the
    library's own. On an H200 (2026-12-04) a target that could not read it: "Failed to profile",
    exit 11; ncu's `bin/ncu` on PATH is a wrapper elsewhere, so its path does not name it."""
    roots: list[Path] = []
    for value in environ.values():
        for item in re.split(r"[:;\s]+", value):  # LD_PRELOAD takes spaces or colons
            lib = Path(item)
            if not (lib.is_absolute() and ".so" in lib.name and lib.is_file()):
                continue
            root = next((a.parent for a in lib.parents if a.name == "target"), lib.parent)
            if root != Path("/") and root not in roots:
                roots.append(root)
    return roots


def ncu_locks() -> list[Path]:
    """ncu's lock folder (/tmp/nvidia/nsight_compute, made by ncu before it starts its target):
    the injected library opens the lock in it for writing ("Failed to open/create lock file")."""
    folders = {Path(tempfile.gettempdir()), Path("/tmp")}
    return [f / "nvidia" / "nsight_compute" for f in folders if (f / "nvidia" / "nsight_compute").is_dir()]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
