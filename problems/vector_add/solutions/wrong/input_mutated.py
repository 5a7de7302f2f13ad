"""Wrong: writes the sum into x and returns it. The values are right, but the caller's input is
destroyed and the output aliases it."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_inplace(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    add_inplace[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return x
