"""Prefix sum, tuned Triton, three passes: naive.py's scheme with blocks of 8192 over 8 warps, so
the block totals are 8192 times fewer than the input and one recursion level covers 2^26 elements.

It moves 16 bytes per element (read and write in the block scan, again in the offset pass), so at
best half the roofline: 47-48% at 2^26 and 2^28 on the H200, about 96% of the bandwidth for the
bytes it moves. The single-pass scan with decoupled look-back (single_pass.py) reached no more
(48% at 2^28, and 57.7 us at 2^20) on the H200 on 2026-12-04 (docs/BENCHMARKS.md)."""

import torch
import triton
import triton.language as tl

BLOCK = 8192
NUM_WARPS = 8


@triton.jit
def block_scan(x_ptr, out_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    s = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offs, s, mask=offs < n)
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def add_offsets(out_ptr, scanned_totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0) + 1
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    offset = tl.load(scanned_totals_ptr + pid - 1)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + offset, mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty_like(x)
    blocks = triton.cdiv(n, BLOCK)
    totals = torch.empty(blocks, dtype=x.dtype, device=x.device)
    block_scan[(blocks,)](x, out, totals, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    if blocks > 1:
        scanned = custom_kernel(totals)
        add_offsets[(blocks - 1,)](out, scanned, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out
