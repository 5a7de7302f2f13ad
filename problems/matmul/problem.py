"""Matmul: out = a @ b for fp16 a (M x K) and b (K x N), accumulated and returned in fp32.

Compute-bound at the benchmark sizes: 2*M*N*K FLOPs against 2*(M*K + K*N) + 4*M*N bytes, far
past the H200's ridge point. The fp16 products are exact in fp32; only the accumulation rounds.
"""

import torch

TESTS = [
    {"m": 1, "n": 1, "k": 1},
    {"m": 17, "n": 33, "k": 65},
    {"m": 64, "n": 64, "k": 64},
    {"m": 100, "n": 70, "k": 130},
    {"m": 16, "n": 32, "k": 2048},  # a long K: low-precision accumulation cannot hide here
]
# The first fits the CPU interpreter (0.03 GFLOP); the others are what an H200 is for.
BENCHMARKS = [
    {"m": 256, "n": 256, "k": 256},
    {"m": 4096, "n": 4096, "k": 4096},
    {"m": 8192, "n": 8192, "k": 8192},
]
# fp32 accumulation of K products: on an H200 (wgmma, fp32 accumulators) the tuned version
# erred by up to 5.7e-3 at 8192^3 against float64 (docs/BENCHMARKS.md, 2026-12-03). 2e-2
# absolute holds that with room; 1e-4 relative still fails an output rounded through fp16 (an
# error of 5e-4 relative: solutions/wrong/fp16_output.py) and fp16 accumulation (1e-1 and more
# at K = 2048: solutions/wrong/low_precision.py).
TOLERANCE = {"atol": 2e-2, "rtol": 1e-4}


def generate_input(seed: int, device: str, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    a = torch.randn(m, k, generator=g, device=device).to(torch.float16)
    b = torch.randn(k, n, generator=g, device=device).to(torch.float16)
    return a, b


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    wide = torch.float64 if a.dtype == torch.float64 else torch.float32
    return a.to(wide) @ b.to(wide)


def cost(m: int, n: int, k: int) -> dict[str, object]:
    return {"flops": 2 * m * n * k, "bytes": 2 * (m * k + k * n) + 4 * m * n, "math": "fp16_tensor"}
