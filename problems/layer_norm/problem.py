"""Layer norm over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias, fp32.

Memory-bound: each row is read once and written once (8 bytes per element), plus the weight and
bias once per call. Biased variance (divided by cols), eps = 1e-5, as torch.nn.LayerNorm.
"""

import torch

EPS = 1e-5
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


def generate_input(
    seed: int, device: str, rows: int, cols: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    x = 2 * torch.randn(rows, cols, generator=g, device=device) + 0.5
    weight = torch.rand(cols, generator=g, device=device) + 0.5
    bias = torch.randn(cols, generator=g, device=device)
    return x, weight, bias


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * weight + bias


def cost(rows: int, cols: int) -> dict[str, int]:
    return {"flops": 8 * rows * cols, "bytes": 4 * (2 * rows * cols + 2 * cols)}
