"""compile: build every kernel the solution launches for the target GPU, without running it."""

from __future__ import annotations

from typing import Any

from rung import backends, knobs
from rung.rungs.outcome import Failed, Skipped
from rung.spec import RungResult, Status


def compile_rung(session: Any, params: dict[str, Any]) -> RungResult:
    source = session.solution_path.read_text(errors="replace")
    backend = backends.detect(source)
    if backend.compile_solution is None:
        raise Skipped(f"{backend.BACKEND.value} solution: nothing to build ahead of time")
    arch = str(knobs.get("RUNG_ARCH"))
    case = session.problem.tests[0]
    inputs = session.inputs(case, session.seed)
    out_dir = session.run_dir / "compile"
    try:
        built = backend.compile_solution(
            session.solution_path, lambda m: m.custom_kernel(*inputs), arch, out_dir
        )
    except backend.CompileFailed as e:
        raise Failed(f"compile error for {arch}:\n{e}") from None
    if not built:
        raise Failed(f"no {backend.BACKEND.value} kernel was launched by custom_kernel on {case}")
    kernels = [
        {
            k: getattr(b, k)
            for k in (
                "name",
                "registers",
                "shared_bytes",
                "local_bytes",
                "spill_instructions",
                "num_warps",
                "num_stages",
                "constexprs",
            )
        }
        for b in built
    ]
    metrics = {
        "arch": arch,
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
        "compile", Status.OK, f"{len(built)} kernel(s) for {arch}: {summary}", metrics, artifacts
    )
