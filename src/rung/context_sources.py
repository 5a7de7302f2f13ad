"""Where `rung context` finds text to index: installed packages, located without importing them,
and the built-in sources an agent writing kernels needs, where this machine has them.

The built-ins are each kernel language's own API, as its installed package ships it (no wheel
ships docs or examples: the docstrings and sources are the reference), and the CUDA toolkit's
headers where a toolkit is found (nvcc on PATH, else /usr/local/cuda). No toolkit ships the PTX ISA
or the CUDA C++ programming guide as text; the nearest are CCCL's `cuda::ptx` wrappers, one per
PTX instruction, each giving the instruction's PTX syntax, the PTX ISA version and the SM it
needs, and the runtime and intrinsics headers, whose comments document each function.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

PACKAGES = {
    "triton.language": "Triton: tl.* and their docstrings",
    "cutlass.cute": "CuTe DSL (nvidia-cutlass-dsl): layouts, tensors, copy and MMA atoms, arch ops",
    "cutlass.pipeline": "CuTe DSL: producer/consumer pipelines over mbarriers and TMA",
    "cutlass.utils": "CuTe DSL: Hopper and Blackwell helpers (shared-memory layouts, schedulers)",
    "tilelang.language": "TileLang: T.copy, T.gemm, T.Pipelined, T.Parallel and the rest of T.*",
    "tilelang.src.tl_templates.cuda": "TileLang: the CUDA templates its generated code calls (gemm, copy, TMA)",
}
CUDA_TOOLKIT = {
    "cuda.ptx": (
        ("include/cccl/cuda/__ptx/instructions/generated",),
        "PTX instructions (cuda::ptx): syntax, PTX ISA version and SM of each",
    ),
    "cuda.headers": (
        (
            "include/cuda_runtime_api.h",
            "include/cuda_bf16.h",
            "include/cuda_fp16.h",
            "include/cuda_fp8.h",
            "include/cuda_pipeline_primitives.h",
            "include/cuda_awbarrier_primitives.h",
            "include/sm_32_intrinsics.h",
            "include/sm_60_atomic_functions.h",
            "include/crt",
            "include/cooperative_groups.h",
            "include/cooperative_groups",
        ),
        "CUDA runtime API, bf16/fp16/fp8 and load intrinsics, warp MMA, sm_90 runtime, cooperative groups",
    ),
}
BUILTINS = (*PACKAGES, *CUDA_TOOLKIT)


def builtin_sources() -> dict[str, list[Path]]:
    """The built-in sources present on this machine, with the folders and files each indexes."""
    found = {name: roots for name in PACKAGES if (roots := locate(name))}
    toolkit = cuda_toolkit()
    if toolkit is not None:
        for name, (parts, _) in CUDA_TOOLKIT.items():
            roots = [toolkit / part for part in parts if (toolkit / part).exists()]
            if roots:
                found[name] = roots
    return found


def cuda_toolkit() -> Path | None:
    """The CUDA toolkit's root: where the nvcc on PATH lives (through symlinks), else /usr/local/cuda;
    None where neither holds include/cuda_runtime.h."""
    nvcc = shutil.which("nvcc")
    candidates = [Path(nvcc).resolve().parents[1]] if nvcc else []
    for root in [*candidates, Path("/usr/local/cuda")]:
        if (root / "include" / "cuda_runtime.h").is_file():
            return root.resolve()
    return None


def locate(name: str) -> list[Path] | None:
    """The folders (a package) or file (a module) of an installed `name`, found without importing it.
    A dotted name may go on into folders that are no Python package (`tilelang.src.tl_templates`)."""
    if not re.fullmatch(r"\w+(\.\w+)*", name):
        return None
    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    places = [Path(p) for p in spec.submodule_search_locations or []]
    if not rest:
        origin = Path(spec.origin) if spec.origin else None
        return places or ([origin] if origin and origin.is_file() else [])
    for i, part in enumerate(rest):
        module = next((p / f"{part}.py" for p in places if (p / f"{part}.py").is_file()), None)
        places = [p / part for p in places if (p / part).is_dir()]
        if not places:
            return [module] if module and i == len(rest) - 1 else None
    return places
