"""Vector add, tuned Triton: 2048 elements per program over 8 warps, so each thread moves 16-byte
vectors. This is what `rung optimize --agent tune` picked from the naive version on an H200
(2026-12-04, docs/BENCHMARKS.md): 736 us at 2^28 elements, 99% of the device's measured add
bandwidth. The earlier tuned version loaded with `eviction_policy="evict_first"` and took 804 us."""

import torch
import triton
import triton.language as tl

BLOCK = 2048
NUM_WARPS = 8


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
