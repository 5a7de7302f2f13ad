"""Matmul, naive Triton: 32x32 output tiles, a K loop of 32, masks everywhere, default warps.

`TUNE` lists the values `rung optimize --agent tune` may try instead (one tile size for M, N
and K: the naive shape stays, only its sizes change).
"""

import torch
import triton
import triton.language as tl

BLOCK = 32
NUM_WARPS = 4
NUM_STAGES = 3
TUNE = {"BLOCK": [32, 64, 128], "NUM_WARPS": [2, 4, 8], "NUM_STAGES": [1, 2, 3]}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
            mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
            mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def custom_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(m, BLOCK), triton.cdiv(n, BLOCK))
    matmul_kernel[grid](a, b, c, m, n, k, BLOCK=BLOCK, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return c
