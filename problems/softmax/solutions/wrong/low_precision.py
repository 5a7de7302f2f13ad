"""Wrong: exponentials and the sum in fp16; the error (about 1e-3 relative) is far past fp32's."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp((x - tl.max(x, axis=0)).to(tl.float16).to(tl.float32)).to(tl.float16)
    s = tl.sum(e, axis=0).to(tl.float16)
    tl.store(out_ptr + row * cols + offs, (e / s).to(tl.float32), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
