"""Problem formats rung reads, each one module that turns a folder into a `LoadedProblem`.

Judge side: loading a problem runs its code, so it happens only in a judge.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rung.judge.formats.base import LoadedProblem
from rung.judge.formats.gpumode import GpuModeProblem
from rung.judge.formats.kernelbench import KernelBenchProblem
from rung.judge.formats.native import NativeProblem
from rung.problem_data import problem_format


def load_problem(path: str | Path) -> LoadedProblem:
    """The problem at `path`, in whichever format it is written (`rung.problem_data.problem_format`):
    a folder with problem.py (rung's own), a folder with reference.py (GPU MODE), or one .py file
    (KernelBench)."""
    where = Path(path)
    loaders: dict[str, Callable[[Path], LoadedProblem]] = {
        "native": NativeProblem,
        "gpumode": GpuModeProblem,
        "kernelbench": KernelBenchProblem,
    }
    return loaders[problem_format(where)](where)


__all__ = ["LoadedProblem", "load_problem"]
