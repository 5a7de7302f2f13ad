"""Kernel languages, one module each, found by what a solution imports.

Each backend module meets `base.KernelBackend`. Adding a language adds a module and one line to
`REGISTRY`; `detect` and `detect_all` answer "which backend" from a source's import statements,
`used` from the modules its import actually ran (what the load rung reports and the CPU skips use).
"""

from __future__ import annotations

import ast
from typing import Any, cast

from rung.backends import cuda_backend, cute_backend, tilelang_backend, torch_backend, triton_backend
from rung.backends.base import BuiltKernel, CompileFailed, KernelBackend
from rung.spec import Backend

# Most specific first: a Triton solution also imports torch. Torch is last: it matches everything.
REGISTRY: list[KernelBackend] = [
    cast(KernelBackend, m)
    for m in (cute_backend, tilelang_backend, cuda_backend, triton_backend, torch_backend)
]


def imported_modules(source: str) -> set[str]:
    """Dotted names of every module `source` imports, and each of their parents
    (`import cutlass.cute as cute` gives "cutlass" and "cutlass.cute")."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            dotted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            dotted = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            names.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return names


def detect_all(source: str) -> list[KernelBackend]:
    """Every backend `source` uses, most specific first; plain torch only when nothing else is."""
    names = imported_modules(source)
    found = [b for b in REGISTRY[:-1] if names & set(b.IMPORTS)]
    return found or [REGISTRY[-1]]


def used(modules: set[str]) -> list[str]:
    """The backends among `modules` (the dotted names, parents included, that a solution's import
    statements asked for as they ran), most specific first; plain torch's when none is: what a
    solution uses, not what its source text names."""
    found = [b for b in REGISTRY[:-1] if modules & set(b.IMPORTS)]
    return [b.BACKEND.value for b in found or [REGISTRY[-1]]]


def detect(source: str) -> KernelBackend:
    """The backend a solution is named by: the first of `detect_all`."""
    return detect_all(source)[0]


# A name no backend generates: a backend that claims it claims every kernel not another's (Triton,
# whose kernels carry their function's bare name).
_UNKNOWN_KERNEL = "rung_no_backend_names_a_kernel_this_way"


def owner_of(kernel: str, found: list[KernelBackend], built: list[dict[str, Any]] | None = None) -> Backend:
    """The backend among a solution's `found` ones that a kernel (by the name a trace gives it)
    belongs to: one that recognises it by name before one that claims any name; plain torch's
    (the registry's last) when none of its kernel languages does. With `built` (the compile
    rung's kernel figures), a backend that knows the kernels it built (`recognises`) claims
    only those, never a library's kernel whose name merely looks like its own."""
    languages = [b for b in found if b is not REGISTRY[-1]]
    claimants = [b for b in languages if _claims(b, kernel, built)]
    specific = [b for b in claimants if not b.owns_kernel(_UNKNOWN_KERNEL)]
    return (specific or claimants or [REGISTRY[-1]])[0].BACKEND


def _claims(backend: KernelBackend, kernel: str, built: list[dict[str, Any]] | None) -> bool:
    recognises = getattr(backend, "recognises", None)  # positive, where the backend has it
    return (
        bool(recognises(kernel, built)) if built is not None and recognises else backend.owns_kernel(kernel)
    )


__all__ = [
    "REGISTRY",
    "Backend",
    "BuiltKernel",
    "CompileFailed",
    "KernelBackend",
    "detect",
    "detect_all",
    "imported_modules",
    "owner_of",
    "used",
]
