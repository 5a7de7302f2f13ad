"""rung: the verifiable loop for GPU kernels.

The public surface is what this module exports (pinned by tests/test_exported_members.py):
the data model, the error tree, and the verbs as functions.
"""

from rung.api import check, history, show
from rung.errors import ProblemError, RungError, SolutionError, StoreError, UsageError, WorkerError
from rung.spec import SCHEMA, Backend, Device, Problem, Run, RungResult, Solution, Status

__all__ = [
    "SCHEMA",
    "Backend",
    "Device",
    "Problem",
    "ProblemError",
    "Run",
    "RungError",
    "RungResult",
    "Solution",
    "SolutionError",
    "Status",
    "StoreError",
    "UsageError",
    "WorkerError",
    "check",
    "history",
    "show",
]
