"""load: the solution process imports the solution and finds its entry point (`custom_kernel`,
or `ModelNew` for KernelBench problems); its backend is detected from its imports (`backends`: every
kernel language it uses, as the judge reads the source; trace attributes kernels by them). A
solution that reaches for the problem's reference, or uses a kernel language whose package is not
installed, fails here, saying so."""

from __future__ import annotations

from typing import Any

from rung import backends
from rung.judge.rungs.outcome import Failed
from rung.spec import RungResult, Status


def load(session: Any, params: dict[str, Any]) -> RungResult:
    proc = session.solution
    answer = proc.request("load", {}, session.timeout_s)
    metrics = {
        "backend": answer.get("backend", ""),
        "backends": _backends(session.source.read_text(errors="replace")),
        "confinement": proc.ready.get("confinement", {}),
    }
    if "failed" in answer:
        raise Failed(str(answer["failed"]), metrics)
    if "error" in answer:
        return RungResult("load", Status.ERROR, str(answer["error"]), metrics)
    metrics["device"] = answer.get("device", "")
    name = session.problem.entry_name
    return RungResult("load", Status.OK, f"{name} found in {session.source.name}", metrics)


def _backends(source: str) -> list[str]:
    try:
        return [b.BACKEND.value for b in backends.detect_all(source)]
    except SyntaxError:  # the solution process says where
        return []
