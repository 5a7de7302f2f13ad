"""Plain PyTorch solutions: nothing to build ahead of time; the ladder still checks and times them."""

from rung.spec import Backend

BACKEND = Backend.TORCH
IMPORTS = ("torch",)
compile_solution = None
