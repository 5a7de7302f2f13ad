"""SwiGLU, naive Triton: the tensors seen as flat vectors, 512 elements per program.

`TUNE` lists the values `rung optimize --agent tune` may try instead.
"""

import torch
import triton
import triton.language as tl

BLOCK = 512
NUM_WARPS = 4
TUNE = {"BLOCK": [512, 1024, 2048, 4096, 8192], "NUM_WARPS": [2, 4, 8, 16]}


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * tl.sigmoid(a) * b, mask=mask)


def custom_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    n = a.numel()
    swiglu_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out
