"""Plain PyTorch solutions: nothing to build ahead of time; the ladder still checks and times them."""

from rung.backends.base import CompileFailed
from rung.spec import Backend

BACKEND = Backend.TORCH
IMPORTS = ("torch",)
EXTRA = ""
compile_solution = None


def owns_kernel(name: str) -> bool:
    return True


__all__ = ["BACKEND", "EXTRA", "IMPORTS", "CompileFailed", "compile_solution", "owns_kernel"]
