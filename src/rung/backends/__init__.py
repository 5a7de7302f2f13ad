"""Kernel languages, one module each, found by what a solution imports.

A backend module declares `BACKEND` (its name), `IMPORTS` (top-level modules whose import marks a
solution as written in it) and, where it can build ahead of time, `compile_solution(...)`.
Adding a language adds a module and one line to `REGISTRY`.
"""

from __future__ import annotations

import ast
import types

from rung.backends import torch_backend, triton_backend
from rung.spec import Backend

# Most specific first: a Triton solution also imports torch.
REGISTRY: list[types.ModuleType] = [triton_backend, torch_backend]


def imported_modules(source: str) -> set[str]:
    """Top-level names of every module `source` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def detect(source: str) -> types.ModuleType:
    """The backend module of a solution's source (torch when nothing more specific is imported)."""
    names = imported_modules(source)
    for backend in REGISTRY:
        if names & set(backend.IMPORTS):
            return backend
    return torch_backend


__all__ = ["REGISTRY", "Backend", "detect", "imported_modules"]
