"""Layer norm, tuned Triton: the row stays in registers (one read, one write), two-pass variance
on the registers (no E[x^2] - E[x]^2 cancellation), rsqrt, warps scaled with the row width so a
thread holds at most 64 values, streaming loads for x, cached loads for weight and bias."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0, eviction_policy="evict_first")
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, eviction_policy="evict_last")
    b = tl.load(b_ptr + offs, mask=mask, eviction_policy="evict_last")
    tl.store(out_ptr + row * stride + offs, d * rstd * w + b, mask=mask)


def _warps(block: int) -> int:
    # Up to 64 values a thread: on an H200, 16 warps at 16384 columns ran at 77% of DRAM
    # bandwidth and 4 warps at 90% (docs/BENCHMARKS.md, 2026-12-03).
    return max(4, min(16, block // (64 * 32)))


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    layer_norm_kernel[(rows,)](
        x, weight, bias, out, cols, x.stride(0), 1e-5, BLOCK=block, num_warps=_warps(block)
    )
    return out
