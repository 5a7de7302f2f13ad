"""What a worker holds for one solution: the problem, the solution module, the device.

All calls into user code go through here: `inputs` and `reference` into the problem, `call` into
the solution (with poisoned allocations, counted launches, and a device sync so asynchronous
errors surface inside the call that caused them).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rung.formats import LoadedProblem, load_problem
from rung.formats.base import import_file
from rung.worker.poison import poisoned_allocations
from rung.worker.profiler_warmup import ProfilerWarmup
from rung.worker.trees import clone_tree, map_tensors

# Functions a solution must leave alone: rung and its users time and check with them.
WATCHED = {
    "time.perf_counter": lambda: time.perf_counter,
    "time.time": lambda: time.time,
    "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
    "torch.cuda.Event": lambda: torch.cuda.Event,
    "torch.allclose": lambda: torch.allclose,
    "torch.equal": lambda: torch.equal,
    "torch.testing.assert_close": lambda: torch.testing.assert_close,
    "torch.Tensor.clone": lambda: torch.Tensor.clone,
    "torch.Tensor.__eq__": lambda: torch.Tensor.__eq__,
}


@dataclass
class Output:
    value: Any
    seconds: float
    launches: int


class Session:
    def __init__(self, hello: dict[str, Any], warm_profiler: bool = False) -> None:
        self.problem_path = Path(hello["problem"])
        self.solution_path = Path(hello["solution"]) if hello.get("solution") else None
        self.run_dir = Path(hello.get("run_dir") or ".")
        self.seed = int(hello.get("seed", 0))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.profiler = ProfilerWarmup() if warm_profiler and self.device == "cuda" else None
        self.launches = _install_launch_counter()
        self.watched = {name: get() for name, get in WATCHED.items()}
        self._problem: LoadedProblem | None = None
        self._module: Any = None
        self._entry: Any = None

    @property
    def problem(self) -> LoadedProblem:
        if self._problem is None:
            self._problem = load_problem(self.problem_path)
        return self._problem

    @property
    def module(self) -> Any:
        if self._module is None:
            assert self.solution_path is not None
            self._module = import_file(self.solution_path, "rung_solution")
        return self._module

    @property
    def entry(self) -> Any:
        """The solution's callable (custom_kernel, or a ModelNew built once), as the problem's format says."""
        if self._entry is None:
            self._entry = self.problem.entry(self.module)
        return self._entry

    def inputs(self, case: dict[str, Any], seed: int, device: str | None = None) -> tuple[Any, ...]:
        return self.problem.inputs(case, seed, device or self.device)

    def reference(self, inputs: tuple[Any, ...], precise: bool) -> Any:
        """The reference output: on float64 copies when `precise` (and allowed), else as given."""
        upcast = precise and self.problem.upcast_reference
        out = self.problem.reference(map_tensors(inputs, _float64) if upcast else clone_tree(inputs))
        self.sync()
        return out

    def call(self, inputs: tuple[Any, ...]) -> Output:
        """One call of the solution on `inputs`, outputs poisoned where it allocates them."""
        fn = self.entry
        before = self.launches.count if self.launches else 0
        start = time.perf_counter()
        with poisoned_allocations():
            value = fn(*inputs)
            self.sync()
        seconds = time.perf_counter() - start
        after = self.launches.count if self.launches else 0
        return Output(value, seconds, after - before)

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def patched(self) -> list[str]:
        """Watched functions that are no longer what they were when the worker started."""
        return [name for name, get in WATCHED.items() if get() is not self.watched[name]]

    def where(self, e: BaseException) -> str:
        """'ExcType: message (at file.py:LINE in fn)', naming the deepest frame in user code."""
        frames = traceback.extract_tb(e.__traceback__)
        mine = {str(p.resolve()) for p in (self.solution_path, self.problem_path / "problem.py") if p}
        user = [f for f in frames if str(Path(f.filename).resolve()) in mine] or frames[-1:]
        text = str(e).strip().splitlines()
        first = text[0] if text else ""
        loc = f" (at {Path(user[-1].filename).name}:{user[-1].lineno} in {user[-1].name})" if user else ""
        return f"{type(e).__name__}: {first}{loc}"


def _install_launch_counter() -> Any:
    try:
        from rung.backends.triton_backend import Launches
    except ImportError:
        return None
    try:
        launches = Launches()
        launches.install()
    except ImportError:
        return None
    return launches


def _float64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float64) if t.is_floating_point() else t.clone()


def configure_process(cpu_memory_mb: int, interpret: bool) -> None:
    """Before any solution code, on CPU-only machines: Triton's interpreter (unless this worker
    only builds kernels: Triton's own @jit helpers such as tl.max must then stay compilable) and
    a memory cap."""
    if not torch.cuda.is_available():
        if interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        if cpu_memory_mb > 0 and sys.platform.startswith("linux"):
            import resource

            limit = cpu_memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
