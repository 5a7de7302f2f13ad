"""load: the solution process imports the solution and finds its entry point (`custom_kernel`,
or `ModelNew` for KernelBench problems). Its backends (`backends`: every kernel language it uses,
trace attributes kernels by them, the CPU skips the rungs a GPU-only one cannot run) are those its
import statements asked for as they ran (`backends_in_source` beside them, as the source reads):
an import that never runs uses nothing. That list is the solution process's report: hiding a
GPU-only backend only makes more rungs run; claiming one only skips rungs, and a version whose
correctness rungs did not run is not ok. A solution that reaches for the problem's reference, or
uses a kernel language whose package is not installed, fails here, saying so."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rung import backends
from rung.judge.rungs.outcome import Failed
from rung.spec import Backend, RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session


def load(session: Session, params: dict[str, Any]) -> RungResult:
    proc = session.ready_to_import()
    answer = proc.request("load", {}, session.timeout_s)
    in_source = _backends(session.source_file.read_text(errors="replace"))
    known = {b.value for b in Backend}
    reported = answer.get("backends")
    if isinstance(reported, list):  # the import ran: what it used
        used = [str(b) for b in reported if str(b) in known][:8] or [Backend.TORCH.value]
    else:  # it did not (failed, raised): the source's word, for the message
        used = in_source
    metrics = {
        "backend": used[0] if used else "",
        "backends": used,
        "backends_in_source": in_source,
        "confinement": proc.ready.get("confinement", {}),
    }
    if "failed" in answer:
        raise Failed(str(answer["failed"]), metrics)
    if "error" in answer:
        return RungResult("load", Status.ERROR, str(answer["error"]), metrics)
    session.backends_used = metrics["backends"]
    metrics["device"] = answer.get("device", "")
    name = session.problem.entry_name
    return RungResult("load", Status.OK, f"{name} found in {session.source_file.name}", metrics)


def _backends(source: str) -> list[str]:
    try:
        return [b.BACKEND.value for b in backends.detect_all(source)]
    except SyntaxError:  # the solution process says where
        return []
