"""load: import the solution in the worker, find `custom_kernel`, detect its backend."""

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
    fn = getattr(module, "custom_kernel", None)
    if fn is None:
        raise Failed(f"{path.name} defines no custom_kernel", {"backend": backend})
    if not callable(fn):
        raise Failed(
            f"custom_kernel in {path.name} is a {type(fn).__name__}, not a function", {"backend": backend}
        )
    return RungResult(
        "load",
        Status.OK,
        f"custom_kernel found in {path.name}",
        {"backend": backend, "device": session.device},
    )
