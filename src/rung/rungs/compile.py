"""compile: build every kernel the solution launches for the target GPU, without running it.

The kernels are specialised for every benchmark case (the shapes that get timed: a wider row
may well compile to other registers and spills), each called with meta tensors: no data, and
pointers that look 16-byte aligned as on a GPU, so the build matches what the GPU will run. A
kernel specialised alike for two cases is built once. Where the problem or the solution cannot
work on meta tensors, the first test case on the worker's device is used instead. Each build's
`case` is the case whose call launched it (a recursive solution launches smaller shapes too).
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
    problem = session.problem
    try:
        built = (
            _build(session, backend, problem.benchmarks, "meta", arch, out_dir) if problem.meta_inputs else []
        )
    except backend.CompileFailed as e:
        raise Failed(f"compile error for {arch}:\n{e}") from None
    except Exception:
        built = []  # the problem or the solution cannot work on meta tensors
    if not built:
        try:
            built = _build(session, backend, problem.tests[:1], session.device, arch, out_dir)
        except backend.CompileFailed as e:
            raise Failed(f"compile error for {arch}:\n{e}") from None
    if not built:
        raise Failed(
            f"no {backend.BACKEND.value} kernel was launched by {problem.entry_name} on {problem.tests[0]}"
        )
    kernels = [
        {**{k: getattr(b, k) for k in FIGURES}, "constexprs": b.constexprs, "case": b.case} for b in built
    ]
    metrics = {
        "arch": arch,
        "kernels": kernels,
        "max_registers": max(b.registers for b in built),
        "max_shared_bytes": max(b.shared_bytes for b in built),
        "spill_instructions": sum(b.spill_instructions for b in built),
    }
    summary = "; ".join(
        f"{b.name} (from {b.case}): {b.registers} regs, {b.shared_bytes} B smem, {b.spill_instructions} spill ops"
        for b in built
    )
    artifacts = [a for b in built for a in b.artifacts]
    return RungResult(
        "compile", Status.OK, f"{len(built)} kernel build(s) for {arch}: {summary}", metrics, artifacts
    )


def _build(
    session: Any, backend: Any, cases: list[dict[str, Any]], device: str, arch: str, out_dir: Any
) -> Any:
    def call_for(case: dict[str, Any]) -> Any:
        return lambda m: session.problem.entry(m)(*session.inputs(case, session.seed, device=device))

    return backend.compile_solution(session.solution_path, [(c, call_for(c)) for c in cases], arch, out_dir)
