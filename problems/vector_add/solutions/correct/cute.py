"""Vector add in CuTe DSL: 16-byte vector loads and stores, four vectors per thread in flight.

Each block of 256 threads covers 4096 elements: thread t of the block moves the 4-element
vectors t, t + 256, t + 512 and t + 768 of its block's tile, so a warp reads 512 contiguous
bytes per load and every thread has 8 loads outstanding before its first add. The last, partial
tile takes the guarded path: whole vectors while they fit, then the (at most 3) last elements
one by one. The layout is dynamic: one build serves every length.
"""

import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
import torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256
VEC = 4  # fp32 elements per 16-byte access
UNROLL = 4
TILE = THREADS * VEC * UNROLL


@cute.kernel
def add_kernel(
    vx: cute.Tensor, vy: cute.Tensor, vout: cute.Tensor, x: cute.Tensor, y: cute.Tensor, out: cute.Tensor
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    n = cute.size(x)
    whole = n // VEC  # vectors entirely inside the tensor
    first = bidx * (THREADS * UNROLL) + tidx
    if first + (UNROLL - 1) * THREADS < whole:
        a = [vx[(None, first + u * THREADS)].load() for u in range(UNROLL)]
        b = [vy[(None, first + u * THREADS)].load() for u in range(UNROLL)]
        for u in cutlass.range_constexpr(UNROLL):
            vout[(None, first + u * THREADS)].store(a[u] + b[u])
    else:
        for u in cutlass.range_constexpr(UNROLL):
            i = first + u * THREADS
            if i < whole:
                vout[(None, i)].store(vx[(None, i)].load() + vy[(None, i)].load())
        if tidx == 0 and bidx == (n - 1) // TILE:  # the last block's first thread: the last n % 4
            for j in cutlass.range(whole * VEC, n):
                out[j] = x[j] + y[j]


@cute.jit
def add(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, stream):
    vx, vy, vout = (cute.zipped_divide(t, (VEC,)) for t in (x, y, out))
    blocks = (cute.size(x) + TILE - 1) // TILE
    add_kernel(vx, vy, vout, x, y, out).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


_built = {}


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    align = 16 if all(t.data_ptr() % 16 == 0 for t in (x, y, out)) else 4
    args = [from_dlpack(t, assumed_align=align).mark_layout_dynamic() for t in (x, y, out)]
    stream = cutlass_torch.current_stream()
    if align not in _built:
        _built[align] = cute.compile(add, *args, stream)
    _built[align](*args, stream)
    return out
