"""Wrong: one program scans one block of 131072 elements, more than any test case holds; past
that nothing is written, and the benchmark sizes are far past it."""

import torch
import triton
import triton.language as tl


@triton.jit
def single_block_scan(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.cumsum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0)
    tl.store(out_ptr + offs, s, mask=offs < n)


def custom_kernel(x):
    out = torch.empty_like(x)
    single_block_scan[(1,)](x, out, x.numel(), BLOCK=131072)
    return out
