"""What a language model is told about each kernel language: how a solution in it is written and
checked here, and the idioms that make it fast on Hopper. The prompt carries the pinned
language's, or, with none pinned, those of every language installed on this machine.

Installed is read without importing anything: a package found on the path (Triton, CuTe DSL's
`cutlass`, TileLang), nvcc on PATH for CUDA C++; plain torch is always there.
"""

from __future__ import annotations

import importlib.util
import shutil

from rung import backends
from rung.errors import UsageError

IDIOMS = {
    "triton": (
        "Triton: `@triton.jit` kernels launched from `custom_kernel` on a grid; `tl.program_id`, "
        "`tl.arange` blocks with masks on ragged edges; block sizes powers of two; `tl.dot` for "
        "matrix products (tensor cores: bf16/fp16 inputs, fp32 accumulation); `num_warps` and "
        "`num_stages` as launch options; one pass over memory where the operation allows it. Runs "
        "under the interpreter on a CPU, so correctness is checked anywhere."
    ),
    "cute": (
        "CuTe DSL (`import cutlass.cute as cute`): `@cute.kernel` bodies launched from a "
        "`@cute.jit` function; layouts and `cute.make_layout`/`local_tile` partitions; TMA "
        "copies and warpgroup MMA (HGMMA) on sm_90a; cache `cute.compile` results keyed by shape; "
        "the stream from `cutlass.torch.current_stream()`. Built without a GPU, run only on one."
    ),
    "tilelang": (
        "TileLang: `@tilelang.jit` functions of `T.Kernel` blocks; `T.alloc_shared`/"
        "`T.alloc_fragment`, `T.copy` (TMA on Hopper), `T.gemm`, `T.Pipelined` loops with "
        "`num_stages`; `out_idx` for outputs it allocates. Built without a GPU, run only on one."
    ),
    "cuda": (
        "CUDA C++ through `torch.utils.cpp_extension.load_inline(cuda_sources=...)`: coalesced, "
        "vectorised (16-byte) loads, shared-memory tiling, warp shuffles for reductions, "
        "`__launch_bounds__`, the launch on torch's current stream. Built with nvcc anywhere, run "
        "only on a GPU."
    ),
    "torch": (
        "PyTorch only: fused torch operations and `torch.compile`; the floor the kernel languages "
        "should beat."
    ),
}


def installed() -> list[str]:
    """The kernel languages a solution may use on this machine, in the registry's order."""
    found = []
    for b in backends.REGISTRY:
        name = b.BACKEND.value
        if name == "cuda":
            ok = shutil.which("nvcc") is not None
        else:
            ok = name == "torch" or importlib.util.find_spec(b.IMPORTS[0].split(".")[0]) is not None
        if ok:
            found.append(name)
    return found


def check_pin(backend: str) -> str:
    """A pinned language, refused (UsageError) where rung knows no such backend."""
    known = [b.BACKEND.value for b in backends.REGISTRY]
    if backend and backend not in known:
        raise UsageError(f"--backend {backend}: not a kernel language rung knows ({', '.join(known)})")
    return backend


def written_in(source: str) -> str:
    """The language a version is named by (the one its imports say), "" where it does not parse."""
    try:
        return backends.detect(source).BACKEND.value
    except SyntaxError:
        return ""


def section(backend: str) -> str:
    """The prompt's language section: the pinned one's idioms, or every installed one's."""
    if backend:
        return f"Write in {backend} (pinned by the person). {IDIOMS[backend]}"
    langs = installed()
    return "Languages installed here; pick the one that fits:\n" + "\n".join(
        f"- {IDIOMS[b]}" for b in langs if b in IDIOMS
    )
