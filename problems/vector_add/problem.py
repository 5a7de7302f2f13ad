"""Vector add: out = x + y for fp32 vectors of any length.

The simplest memory-bound kernel: 8 bytes read and 4 written per element, one FLOP. At the
benchmark sizes it runs at DRAM bandwidth or not at all.
"""

import torch

TESTS = [{"n": 1}, {"n": 1000}, {"n": 4097}, {"n": 65539}]
# 2^20 fits the CPU interpreter; 2^24 and 2^28 (0.2 and 3 GiB moved) dwarf an H200's 60 MB L2.
BENCHMARKS = [{"n": 2**20}, {"n": 2**24}, {"n": 2**28}]


def generate_input(seed: int, device: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    # Drawn where they live (a CUDA generator on a GPU): 2^28 elements drawn on the CPU take seconds.
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    x = torch.randn(n, generator=g, device=device)
    y = torch.randn(n, generator=g, device=device)
    return x, y


def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


def cost(n: int) -> dict[str, int]:
    return {"flops": n, "bytes": 3 * 4 * n}
