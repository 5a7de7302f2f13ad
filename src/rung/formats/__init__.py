"""Problem formats rung reads, each one module that turns a folder into a `LoadedProblem`.

Worker side: loading a problem runs its code, so it happens only in a worker.
"""

from __future__ import annotations

from pathlib import Path

from rung.errors import ProblemError
from rung.formats.base import LoadedProblem
from rung.formats.native import NativeProblem


def load_problem(path: str | Path) -> LoadedProblem:
    """The problem at `path`, in whichever format it is written."""
    folder = Path(path)
    if not folder.is_dir():
        raise ProblemError(f"{folder}: not a folder")
    if (folder / "problem.py").is_file():
        return NativeProblem(folder)
    raise ProblemError(f"{folder}: no problem.py (not a rung problem folder)")


__all__ = ["LoadedProblem", "load_problem"]
