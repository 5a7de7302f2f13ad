"""Layer norm, naive Triton: one program per row, the whole row in one block, default warps.

`TUNE` lists the values `rung optimize --agent tune` may try instead.
"""

import torch
import triton
import triton.language as tl

NUM_WARPS = 4
TUNE = {"NUM_WARPS": [1, 2, 4, 8, 16, 32]}


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + row * cols + offs, y, mask=mask)


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    layer_norm_kernel[(rows,)](x, weight, bias, out, cols, 1e-5, BLOCK=block, num_warps=NUM_WARPS)
    return out
