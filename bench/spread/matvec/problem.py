"""Matrix-vector product y = W @ x, fp32, with few rows and a long K: the shape that needs split-K.

A held-out case for the spread benchmark (bench/spread.py), not an example: with 16 to 256 rows a
row per program leaves most SMs idle, so a fast solution splits K across programs and reduces the
partial sums in a second kernel, and rung times the pair as one call. Memory-bound: W is read
once (4 bytes an element, 2 FLOPs), x and y are small beside it. The benchmark sizes put W at
64 and 128 MB, above an H200's 60 MB L2, so one call takes 15 to 40 us.
"""

import torch

TESTS = [{"m": 1, "k": 1}, {"m": 3, "k": 1000}, {"m": 16, "k": 4099}, {"m": 64, "k": 65536}]
BENCHMARKS = [{"m": 64, "k": 2**18}, {"m": 256, "k": 2**17}]
# A sum of up to 2^18 products of unit normals is about 512 in size; float32 sums taken in another
# order differ by about 1e-4 of that.
TOLERANCE = {"atol": 1e-3, "rtol": 1e-4}


def generate_input(seed: int, device: str, m: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    w = torch.randn(m, k, generator=g, device=device)
    x = torch.randn(k, generator=g, device=device)
    return w, x


def reference(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return w @ x


def cost(m: int, k: int) -> dict[str, int]:
    return {"flops": 2 * m * k, "bytes": 4 * (m * k + k + m)}
