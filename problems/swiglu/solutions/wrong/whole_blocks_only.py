"""Wrong: the grid counts whole blocks only (n // BLOCK), so a tail shorter than a block, and
any input smaller than one, is never written."""

import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, a * tl.sigmoid(a) * b)


def custom_kernel(a, b):
    out = torch.empty_like(a)
    n = a.numel()
    swiglu_kernel[(n // 512,)](a, b, out, n, BLOCK=512)
    return out
