"""Wrong on purpose: CuTe DSL vector add that moves whole 16-byte vectors only.

The last n % 4 elements are never written, so a length that is not a multiple of 4 (the first
test case, n = 1) leaves poisoned elements in the output: run fails with "never written".
"""

import cutlass.cute as cute
import cutlass.torch as cutlass_torch
import torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256
VEC = 4


@cute.kernel
def add_kernel(vx: cute.Tensor, vy: cute.Tensor, vout: cute.Tensor, whole: cute.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < whole:
        vout[(None, i)].store(vx[(None, i)].load() + vy[(None, i)].load())


@cute.jit
def add(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, stream):
    whole = cute.size(x) // VEC
    vx, vy, vout = (cute.zipped_divide(t, (VEC,)) for t in (x, y, out))
    blocks = (whole + THREADS - 1) // THREADS + 1
    add_kernel(vx, vy, vout, whole).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


_built = {}


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    args = [from_dlpack(t, assumed_align=16).mark_layout_dynamic() for t in (x, y, out)]
    stream = cutlass_torch.current_stream()
    if "add" not in _built:
        _built["add"] = cute.compile(add, *args, stream)
    _built["add"](*args, stream)
    return out
