"""Row softmax, naive Triton: one program per row, the whole row in one block, default warps.

`TUNE` lists the values `rung optimize --agent tune` may try instead.
"""

import torch
import triton
import triton.language as tl

NUM_WARPS = 4
TUNE = {"NUM_WARPS": [1, 2, 4, 8, 16, 32]}


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols), num_warps=NUM_WARPS)
    return out
