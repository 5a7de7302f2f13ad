"""Layer norm, tuned Triton: the row stays in registers (one read, one write), two-pass variance
on the registers (no E[x^2] - E[x]^2 cancellation), rsqrt, streaming loads for x, cached loads
for weight and bias, and warps chosen so that at least two rows are resident on each SM."""

import torch
import triton
import triton.language as tl

# Warps per program (one row each). Registers, compiled for sm_90 through rung's Triton backend:
#   cols     4 warps   8 warps   16 warps   32 warps
#   4096     63        40        32         24
#   8192     147       64        39         32
#   16384    255(*)    155       94         32        (*) spills in this kernel
# A program that is alone on its SM reads nothing while it reduces and writes: at 16384 columns
# 8 and 16 warps leave room for one program per SM and ran at 76-77% of DRAM bandwidth on an
# H200, while the 4-warp naive kernel (two per SM) ran at 90% (docs/BENCHMARKS.md, 2026-12-03).
# Up to 8192 columns 4 warps keep three or more rows per SM (91-96%; 8 warps at 8192: 89%);
# wider rows get 32 warps, whose 32 registers let two 1024-thread programs share an SM. The
# 32-warp choice follows from those figures; it has not been timed on an H200 yet.
NARROW_WARPS = 4
WIDE_WARPS = 32
WIDE_FROM = 16384


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, eviction_policy="evict_last")
    b = tl.load(b_ptr + offs, mask=mask, eviction_policy="evict_last")
    tl.store(out_ptr + row * stride + offs, d * rstd * w + b, mask=mask)


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = WIDE_WARPS if block >= WIDE_FROM else NARROW_WARPS
    layer_norm_kernel[(rows,)](x, weight, bias, out, cols, x.stride(0), 1e-5, BLOCK=block, num_warps=warps)
    return out
