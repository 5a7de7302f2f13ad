"""Prefix sum, naive Triton: scan each block of 1024 and write its total; scan the totals (the
same function, recursively); add each block's offset. Three passes over the data.

`TUNE` lists the values `rung optimize --agent tune` may try instead.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
NUM_WARPS = 4
TUNE = {"BLOCK": [256, 512, 1024, 2048, 4096], "NUM_WARPS": [2, 4, 8, 16]}


@triton.jit
def block_scan(x_ptr, out_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    s = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offs, s, mask=offs < n)
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def add_offsets(out_ptr, scanned_totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0) + 1
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    offset = tl.load(scanned_totals_ptr + pid - 1)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + offset, mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty_like(x)
    blocks = triton.cdiv(n, BLOCK)
    totals = torch.empty(blocks, dtype=x.dtype, device=x.device)
    block_scan[(blocks,)](x, out, totals, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    if blocks > 1:
        scanned = custom_kernel(totals)
        add_offsets[(blocks - 1,)](out, scanned, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out
