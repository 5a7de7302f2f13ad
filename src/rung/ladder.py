"""The ladder: every rung in order, what it needs, where it runs, how long it may take.

Rungs are data. A rung runs when every rung it needs passed (OK); otherwise it is SKIPPED with
the name of the one that did not. A rung that needs a GPU is SKIPPED on a machine without one,
never passed silently; so is a rung that runs the solution's kernels (`runs_kernels`) when one of
the solution's backends cannot run them on the CPU (`KernelBackend.RUNS_ON_CPU`: only Triton, by
its interpreter, and torch can).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RungSpec:
    name: str
    does: str
    needs: tuple[str, ...] = ()
    needs_gpu: bool = False
    runs_kernels: bool = False  # calls the solution: needs a GPU where a backend has no CPU path
    timeout_s: float = 120.0
    in_controller: bool = False  # computed from earlier rungs' figures; runs no solution code


LADDER: tuple[RungSpec, ...] = (
    RungSpec(
        "load",
        "import in a fresh, confined solution process; find custom_kernel; detect the backend",
        timeout_s=120,
    ),
    RungSpec(
        "compile",
        "build every launched kernel for the target without running it",
        ("load",),
        timeout_s=300,
    ),
    RungSpec(
        "run",
        "one call: kind, shape, dtype, every element written, finite",
        ("load",),
        runs_kernels=True,
        timeout_s=120,
    ),
    RungSpec(
        "guard",
        "no mutated inputs, aliasing, caching, subclasses, patching; a kernel launched",
        ("run",),
        runs_kernels=True,
    ),
    RungSpec(
        "correct",
        "every test case on fresh seeds against the reference",
        ("run",),
        runs_kernels=True,
        timeout_s=600,
    ),
    RungSpec(
        "scale",
        "every benchmark case (the timed sizes) against the reference",
        ("correct",),
        runs_kernels=True,
        timeout_s=900,
    ),
    RungSpec(
        "memcheck",
        "compute-sanitizer memcheck on the smallest test cases: no out-of-bounds access, when asked (RUNG_MEMCHECK=1)",
        ("run",),
        needs_gpu=True,
        runs_kernels=True,
        timeout_s=900,
    ),
    RungSpec("bench", "device timing per benchmark case", ("scale",), needs_gpu=True, timeout_s=1800),
    RungSpec("roofline", "percent of the attainable time", ("bench",), needs_gpu=True, in_controller=True),
    RungSpec("dump", "SASS facts from the compiled kernels", ("compile",), in_controller=True),
    RungSpec(
        "trace",
        "per-kernel GPU times of a call, from bench's CUPTI traces",
        ("bench",),
        needs_gpu=True,
        in_controller=True,
    ),
    RungSpec(
        "profile",
        "Nsight Compute on the kernels of one call of the largest case",
        ("scale",),
        needs_gpu=True,
        timeout_s=600,
    ),
    RungSpec(
        "scopes",
        "cycles per scope per warp inside each Triton kernel (proton), when asked (RUNG_SCOPES=1)",
        ("scale",),
        needs_gpu=True,
        timeout_s=600,
    ),
)

NAMES = tuple(r.name for r in LADDER)
