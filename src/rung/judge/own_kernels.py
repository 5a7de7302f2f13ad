"""Which kernels are the solution's own: known positively, never by a name's look alone.

A solution in a kernel language (Triton, CUDA C++, CuTe DSL, TileLang) must run a kernel of that
language. Its kernels are those the compile rung built; where it built none, those its source
declares (Triton's `@triton.jit` functions, read from the judge's copy); else none at all, so a
library's kernel (cuBLAS's gemv, torch's own) never passes for the solution's. Guard attributes
the kernels CUPTI saw in the solution's process (`rungs/guard.py`); the profile rung attributes
those Nsight Compute saw, a list the solution's process cannot write (`rungs/profile.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rung import backends

if TYPE_CHECKING:
    from rung.judge.session import Session


def languages(session: Session) -> list[Any]:
    """The solution's backends that launch kernels of their own: those its import used (the load
    rung's finding, else its import statements), but plain torch, the registry's last entry, which
    stands for no kernel language at all."""
    used = session.backends_used
    found = (
        [b for b in backends.REGISTRY if b.BACKEND.value in used]
        if used is not None
        else backends.detect_all(session.source_file.read_text(errors="replace"))
    )
    return [b for b in found if b is not backends.REGISTRY[-1]]


def known(session: Session, kernel_backends: list[Any]) -> list[dict[str, Any]]:
    """The solution's own kernels, as the compile rung's figures name them."""
    if session.built_kernels:
        return session.built_kernels
    source = session.source_file.read_text(errors="replace")
    return [k for b in kernel_backends for k in (b.declared(source) if hasattr(b, "declared") else [])]


def attributed(
    kernels: list[str], kernel_backends: list[Any], built: list[dict[str, Any]] | None = None
) -> dict[str, str]:
    """Each kernel name to the backend it belongs to (torch's where none of the solution's does):
    with `built` (the solution's known kernels), only one of those is its own."""
    return {name: backends.owner_of(name, kernel_backends, built).value for name in kernels}


def not_launched(kernels: list[str], kernel_backends: list[Any], built: list[dict[str, Any]]) -> str:
    """'' where a kernel of the solution's languages is among `kernels` (by the names a trace or
    a profiler gives them); else what ran instead, as a reason."""
    names = " or ".join(b.BACKEND.value for b in kernel_backends)
    torch = backends.REGISTRY[-1].BACKEND.value
    if any(b != torch for b in attributed(kernels, kernel_backends, built).values()):
        return ""
    seen = f" (only torch's: {', '.join(k[:60] for k in kernels[:3])})" if kernels else ""
    unknown = "" if built else f"; neither compile nor the source named a {names} kernel to recognise"
    return f"no {names} kernel was launched during the call{seen}{unknown}"
