"""compile: build every kernel the solution launches for the target GPU, without running it.

The kernels are specialised for the largest benchmark case (the one that gets timed), called
with meta tensors: no data, and pointers that look 16-byte aligned as on a GPU, so the build
matches what the GPU will run. Where the problem or the solution cannot work on meta tensors,
the first test case on the worker's device is used instead; `case` in the figures says which.
"""

from __future__ import annotations

from typing import Any

from rung import backends, knobs
from rung.rungs.outcome import Failed, Skipped
from rung.spec import RungResult, Status

FIGURES = (
    "name",
    "registers",
    "shared_bytes",
    "local_bytes",
    "spill_instructions",
    "num_warps",
    "num_stages",
)


def compile_rung(session: Any, params: dict[str, Any]) -> RungResult:
    source = session.solution_path.read_text(errors="replace")
    backend = backends.detect(source)
    if backend.compile_solution is None:
        raise Skipped(f"{backend.BACKEND.value} solution: nothing to build ahead of time")
    arch = str(knobs.get("RUNG_ARCH"))
    out_dir = session.run_dir / "compile"
    built: list[Any] = []
    case: dict[str, Any] = {}
    for case, device in _cases(session):
        try:
            inputs = session.inputs(case, session.seed, device=device)
            built = backend.compile_solution(
                session.solution_path,
                lambda m, inputs=inputs: session.problem.entry(m)(*inputs),
                arch,
                out_dir,
            )
            break
        except backend.CompileFailed as e:
            raise Failed(f"compile error for {arch}:\n{e}") from None
        except Exception:
            if device != "meta":
                raise
    if not built:
        raise Failed(
            f"no {backend.BACKEND.value} kernel was launched by {session.problem.entry_name} on {case}"
        )
    kernels = [{**{k: getattr(b, k) for k in FIGURES}, "constexprs": b.constexprs} for b in built]
    metrics = {
        "arch": arch,
        "case": case,
        "kernels": kernels,
        "max_registers": max(b.registers for b in built),
        "max_shared_bytes": max(b.shared_bytes for b in built),
        "spill_instructions": sum(b.spill_instructions for b in built),
    }
    summary = "; ".join(
        f"{b.name}: {b.registers} regs, {b.shared_bytes} B smem, {b.spill_instructions} spill ops"
        for b in built
    )
    artifacts = [a for b in built for a in b.artifacts]
    return RungResult(
        "compile", Status.OK, f"{len(built)} kernel(s) for {arch} at {case}: {summary}", metrics, artifacts
    )


def _cases(session: Any) -> list[tuple[dict[str, Any], str]]:
    """(case, device) to try in order: the largest benchmark on meta, then the first test for real."""
    problem = session.problem
    options = []
    if problem.benchmarks and problem.meta_inputs:
        largest = max(problem.benchmarks, key=lambda c: (problem.cost(c) or {}).get("bytes", 0))
        options.append((largest, "meta"))
    options.append((problem.tests[0], session.device))
    return options
