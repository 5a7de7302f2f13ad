"""Split-K matvec in Triton, two kernels a call: each program sums a block of rows over one slice
of K into a partial row of a (splits, m) buffer, then a second kernel adds the partial rows. The
number of slices fills the GPU whatever m is; the second kernel reads splits * m floats, a few
kilobytes beside W."""

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_K = 16, 256
SLICE_K = 8192  # K per program: 2^18 columns give 32 slices, times m / 16 row blocks


@triton.jit
def partial_kernel(
    w_ptr, x_ptr, part_ptr, m, k, stride_w, SLICE: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    s = tl.program_id(1)
    base = s * SLICE
    acc = tl.zeros((BM,), dtype=tl.float32)
    for k0 in range(base, base + SLICE, BK):
        cols = k0 + tl.arange(0, BK)
        keep = cols < k
        w = tl.load(
            w_ptr + rows[:, None] * stride_w + cols[None, :],
            mask=(rows[:, None] < m) & keep[None, :],
            other=0.0,
        )
        x = tl.load(x_ptr + cols, mask=keep, other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(part_ptr + s * m + rows, acc, mask=rows < m)


@triton.jit
def reduce_kernel(part_ptr, y_ptr, m, splits, BM: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    acc = tl.zeros((BM,), dtype=tl.float32)
    for s in range(0, splits):
        acc += tl.load(part_ptr + s * m + rows, mask=rows < m, other=0.0)
    tl.store(y_ptr + rows, acc, mask=rows < m)


def custom_kernel(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    m, k = w.shape
    w = w.contiguous()
    splits = triton.cdiv(k, SLICE_K)
    part = torch.empty(splits, m, device=w.device, dtype=torch.float32)
    y = torch.empty(m, device=w.device, dtype=torch.float32)
    partial_kernel[(triton.cdiv(m, BLOCK_M), splits)](
        w, x, part, m, k, w.stride(0), SLICE=SLICE_K, BM=BLOCK_M, BK=BLOCK_K, num_warps=4
    )
    reduce_kernel[(triton.cdiv(m, 128),)](part, y, m, splits, BM=128, num_warps=4)
    return y
