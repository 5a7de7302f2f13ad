"""Prefix sum: the inclusive cumulative sum of an int32 vector, out[i] = x[0] + ... + x[i].

Memory-bound: 4 bytes read and 4 written per element at best; a multi-pass scan moves more.
Integers, so every version must match exactly: there is no rounding to argue about.
"""

import torch

TESTS = [{"n": 1}, {"n": 5}, {"n": 1000}, {"n": 4097}, {"n": 70001}]
# The first fits the CPU interpreter (8 MiB); the rest are several times an H200's 60 MB L2.
BENCHMARKS = [{"n": 2**20}, {"n": 2**26}, {"n": 2**28}]


def generate_input(seed: int, device: str, n: int) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    return (torch.randint(-8, 9, (n,), generator=g, device=device, dtype=torch.int32),)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, dim=0, dtype=torch.int32)


def cost(n: int) -> dict[str, int]:
    return {"flops": n, "bytes": 2 * 4 * n}
