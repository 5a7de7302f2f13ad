"""Problem formats rung reads, each one module that turns a folder into a `LoadedProblem`.

Judge side: loading a problem runs its code, so it happens only in a judge.
"""

from __future__ import annotations

from pathlib import Path

from rung.errors import ProblemError
from rung.judge.formats.base import LoadedProblem
from rung.judge.formats.gpumode import GpuModeProblem
from rung.judge.formats.kernelbench import KernelBenchProblem
from rung.judge.formats.native import NativeProblem


def load_problem(path: str | Path) -> LoadedProblem:
    """The problem at `path`, in whichever format it is written: a folder with problem.py (rung's
    own), a folder with reference.py (GPU MODE), or one .py file (KernelBench)."""
    where = Path(path)
    if where.is_file() and where.suffix == ".py":
        return KernelBenchProblem(where)
    if not where.is_dir():
        raise ProblemError(f"{where}: neither a problem folder nor a KernelBench .py file")
    if (where / "problem.py").is_file():
        return NativeProblem(where)
    if (where / "reference.py").is_file() or (where / "task.yml").is_file():
        return GpuModeProblem(where)
    raise ProblemError(f"{where}: no problem.py (rung), reference.py (GPU MODE) or .py file (KernelBench)")


__all__ = ["LoadedProblem", "load_problem"]
