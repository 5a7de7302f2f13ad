"""Wrong: the row is loaded without its mask, so when cols is not a power of two the block
reads the start of the next row into the max and the sum."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
