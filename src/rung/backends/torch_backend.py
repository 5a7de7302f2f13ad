"""Plain PyTorch solutions: nothing to build ahead of time; the ladder still checks and times them."""

from rung.backends.base import CompileFailed
from rung.spec import Backend

BACKEND = Backend.TORCH
IMPORTS = ("torch",)
EXTRA = ""
RUNS_ON_CPU = True
compile_solution = None

TEMPLATE = '''\
"""A first version in plain PyTorch: the baseline the next versions must beat."""

import torch


def custom_kernel(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    return torch.add(torch.mul(x, scale), shift)
'''


def owns_kernel(name: str) -> bool:
    return True


__all__ = [
    "BACKEND",
    "EXTRA",
    "IMPORTS",
    "RUNS_ON_CPU",
    "TEMPLATE",
    "CompileFailed",
    "compile_solution",
    "owns_kernel",
]
