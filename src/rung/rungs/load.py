"""load: import the solution in the worker, find its entry point (`custom_kernel`, or `ModelNew` for
KernelBench problems), detect its backend."""

from __future__ import annotations

from typing import Any

from rung import backends
from rung.rungs.outcome import Failed
from rung.spec import RungResult, Status


def load(session: Any, params: dict[str, Any]) -> RungResult:
    path = session.solution_path
    source = path.read_text(errors="replace")
    try:
        compile(source, str(path), "exec")
    except SyntaxError as e:
        raise Failed(f"SyntaxError at {path.name}:{e.lineno}: {e.msg}") from None
    backend = backends.detect(source).BACKEND.value
    module = session.module
    name = session.problem.entry_name
    fn = getattr(module, name, None)
    if fn is None:
        raise Failed(f"{path.name} defines no {name}", {"backend": backend})
    if not callable(fn):
        raise Failed(f"{name} in {path.name} is a {type(fn).__name__}, not callable", {"backend": backend})
    return RungResult(
        "load",
        Status.OK,
        f"{name} found in {path.name}",
        {"backend": backend, "device": session.device},
    )
