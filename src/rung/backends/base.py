"""The contract every kernel language meets, and what a build of one kernel reports.

A backend is one module of this package. Its module-level names satisfy `KernelBackend`:
`BACKEND` and `IMPORTS` say what it is and how a solution is recognised as using it; `EXTRA` names
the optional dependency group that installs it; `RUNS_ON_CPU` says whether its kernels can run on
a machine without a GPU (Triton through its interpreter; otherwise the rungs that call the
solution are SKIPPED there); `TEMPLATE` is a first solution in the language for `rung new`; `compile_solution` builds every kernel a solution
launches for a target arch without a GPU (None where there is nothing to build ahead of time);
`CompileFailed` carries the compiler's own lines; `owns_kernel` recognises its kernels by the
names a profiler or a CUPTI trace reports, so each kernel of a mixed solution is attributed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rung.spec import Backend

# One call of the solution on one case's inputs: `call(module)` runs the entry point once.
Call = tuple[dict[str, Any], Callable[[Any], Any]]


class CompileFailed(Exception):
    """A compiler rejected a kernel; the message holds the compiler's own lines (file, line, error)."""


@dataclass
class BuiltKernel:
    """One kernel built for one arch: its resource figures and the files its build left."""

    name: str
    registers: int = 0
    shared_bytes: int = 0
    local_bytes: int = 0
    spill_instructions: int = 0
    max_threads: int = 0
    num_warps: int = 0
    num_stages: int = 0
    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, Any] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    case: dict[str, Any] = field(default_factory=dict)  # the case whose call launched it
    build_s: float = 0.0
    cached: bool = False


class KernelBackend(Protocol):
    BACKEND: Backend
    IMPORTS: tuple[str, ...]
    EXTRA: str
    RUNS_ON_CPU: bool
    TEMPLATE: str
    CompileFailed: type[Exception]

    @staticmethod
    def compile_solution(
        solution_path: Path, calls: list[Call], arch: str, out_dir: Path
    ) -> list[BuiltKernel]: ...

    @staticmethod
    def owns_kernel(name: str) -> bool: ...


def compiler_lines(text: str, keep: int = 12) -> str:
    """The first `keep` non-blank lines of a compiler's message."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:keep])
