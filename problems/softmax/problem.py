"""Row softmax: out[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))), fp32.

Memory-bound: 4 bytes read and 4 written per element, a handful of FLOPs. A kernel that keeps a
row in registers reads it once; one that re-reads it for the max, the sum and the output moves
three times the bytes.
"""

import torch

TESTS = [
    {"rows": 3, "cols": 7},
    {"rows": 1, "cols": 1},
    {"rows": 37, "cols": 1000},
    {"rows": 5, "cols": 1823},
]
# The first fits the CPU interpreter (32 MiB); the rest are several times an H200's 60 MB L2.
BENCHMARKS = [
    {"rows": 1024, "cols": 4096},
    {"rows": 8192, "cols": 8192},
    {"rows": 32768, "cols": 4096},
    {"rows": 4096, "cols": 16384},
]


def generate_input(seed: int, device: str, rows: int, cols: int) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    return (3 * torch.randn(rows, cols, generator=g, device=device),)


def reference(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.max(dim=-1, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


def cost(rows: int, cols: int) -> dict[str, int]:
    return {"flops": 4 * rows * cols, "bytes": 2 * 4 * rows * cols}
