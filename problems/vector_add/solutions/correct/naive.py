"""Vector add, naive Triton: one program per 256 elements, masked tail, default warps.

`TUNE` lists the values `rung optimize --agent tune` may try instead.
"""

import torch
import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 4
TUNE = {"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "NUM_WARPS": [2, 4, 8, 16]}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out
