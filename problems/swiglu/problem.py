"""SwiGLU gate, fused: out = silu(a) * b = a * sigmoid(a) * b, for fp32 a and b of one shape.

The fused op of the set. Memory-bound: 8 bytes read and 4 written per element; unfused in
eager PyTorch it is three kernels and twice the traffic (silu writes a temporary, the product
reads it back).
"""

import torch

TESTS = [
    {"rows": 1, "cols": 1},
    {"rows": 3, "cols": 7},
    {"rows": 37, "cols": 1000},
    {"rows": 5, "cols": 4099},
]
# The first fits the CPU interpreter (12 MiB); the rest are several times an H200's 60 MB L2.
BENCHMARKS = [{"rows": 256, "cols": 4096}, {"rows": 8192, "cols": 8192}, {"rows": 16384, "cols": 14336}]


def generate_input(seed: int, device: str, rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    a = 3 * torch.randn(rows, cols, generator=g, device=device)
    b = torch.randn(rows, cols, generator=g, device=device)
    return a, b


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a / (1 + torch.exp(-a)) * b


def cost(rows: int, cols: int) -> dict[str, int]:
    return {"flops": 5 * rows * cols, "bytes": 3 * 4 * rows * cols}
