"""CuTe DSL solutions (nvidia-cutlass-dsl): build every kernel they launch for the target GPU.

Building needs no GPU. The solution is imported afresh and called once per case with CuTe DSL
set to build for the target arch (`sm_90a` on Hopper, where `RUNG_ARCH` says sm_90) and to keep its clean MLIR, PTX and
CUBIN, and with its launches intercepted: a `@cute.jit` function called directly, or one
compiled with `cute.compile` and then called, is built and not run. Torch tensors without
device memory (the compile rung's meta tensors, or CPU tensors) reach the DSL described as
CUDA tensors (`cute_fake.OnCuda`), so the code built is the code the GPU will run: global
loads, the same shapes and strides. The host code runs on fake CUDA (`fake_cuda`): device
guards, `torch.cuda.current_stream().cuda_stream` (the null stream) and `cuda.CUstream` of it,
`cutlass.torch.current_stream()`, fake CUDA tensors of the inputs' shapes. SASS and the
resource figures come from the CUBIN (`cubin.describe`).

CuTe DSL bypasses its own caches while it keeps PTX and CUBIN; builds are kept in rung's build
cache instead (`cute_cache`: keyed by the traced module, so tracing still runs on a hit and the
compile to CUBIN does not). `build_s` is the time from the call's start, or the previous launch,
to the launch: tracing and building.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung.backends import fake_cuda
from rung.backends.base import BuiltKernel, Call, CompileFailed, compiler_lines
from rung.backends.cubin import describe
from rung.spec import Backend

BACKEND = Backend.CUTE
IMPORTS = ("cutlass", "cutlass.cute")
EXTRA = "cute"
RUNS_ON_CPU = False  # CuTe DSL kernels run on a GPU only

TEMPLATE = '''\
"""A first version in CuTe DSL: one thread per element, 256 threads per block, the tail guarded."""

import cutlass.cute as cute
import cutlass.torch as cutlass_torch
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def scale_shift_kernel(x: cute.Tensor, out: cute.Tensor, scale: cute.Float32, shift: cute.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    if i < cute.size(x):
        out[i] = x[i] * scale + shift


@cute.jit
def scale_shift(x: cute.Tensor, out: cute.Tensor, scale: cute.Float32, shift: cute.Float32, stream):
    blocks = (cute.size(x) + 255) // 256
    scale_shift_kernel(x, out, scale, shift).launch(grid=(blocks, 1, 1), block=(256, 1, 1), stream=stream)


_built = {}  # one build per length: the length is part of the compiled layout


def custom_kernel(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    out = torch.empty_like(x)
    args = (from_dlpack(x), from_dlpack(out), cute.Float32(scale), cute.Float32(shift))
    stream = cutlass_torch.current_stream()
    if x.numel() not in _built:
        _built[x.numel()] = cute.compile(scale_shift, *args, stream)
    _built[x.numel()](*args, stream)
    return out
'''

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def owns_kernel(name: str) -> bool:
    """CuTe DSL names each kernel `kernel_cutlass_<function>_<argument types>_<n>`."""
    return bool(re.match(r"(void )?kernel_cutlass_", name))


def recognises(name: str, built: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a kernel, by the name CUPTI gives it, is one the compile rung built from the
    solution's `@cute.kernel` functions (`built`: its kernel figures, each with the function's
    name in `constexprs["function"]`). CuTe DSL names a kernel after its function and then its
    arguments' types and layouts, which differ from case to case: the function decides."""
    return any(
        re.match(rf"(void )?kernel_cutlass_{re.escape(str(k.get('constexprs', {}).get('function')))}_", name)
        for k in built
        if k.get("constexprs", {}).get("function")
    )


@dataclass
class _Build:
    """One compiled `@cute.jit` function and the kernels it launches (Python name, symbol, smem)."""

    compiled: Any
    kernels: list[tuple[str, str, int]] = field(default_factory=list)
    build_s: float = 0.0


def compile_solution(solution_path: Path, calls: list[Call], arch: str, out_dir: Path) -> list[BuiltKernel]:
    """Build every distinct kernel the given calls launch, for `arch`; write MLIR, PTX, CUBIN and
    SASS to `out_dir`. A function built alike for two cases (the same CUBIN) is written once."""
    from rung.common.loader import import_file

    arch = dsl_arch(arch)
    out_dir.mkdir(parents=True, exist_ok=True)
    built: list[BuiltKernel] = []
    seen: set[str] = set()
    with (
        tempfile.TemporaryDirectory(prefix="cute_dump_") as dump,
        _building(arch, Path(dump)) as builds,
        fake_cuda.host(arch, solution_path),
    ):
        module = _located(lambda: import_file(solution_path, "rung_solution_cute"), solution_path)
        for case, call in calls:
            builds.clear()
            _located(lambda c=call: c(module), solution_path)
            for b in builds:
                cubin = b.compiled.__cubin__
                digest = hashlib.sha256(cubin or b"").hexdigest()
                if cubin is None or digest in seen:
                    continue
                seen.add(digest)
                for kernel in _write(b, arch, out_dir, {k.name for k in built}):
                    kernel.case = case
                    built.append(kernel)
    return built


def dsl_arch(arch: str) -> str:
    """The arch CuTe DSL builds for on a device of `arch`: from Hopper on, the arch-specific
    variant (sm_90 -> sm_90a; HGMMA and TMA exist only there), as the DSL picks on a GPU."""
    plain = re.fullmatch(r"sm_(\d+)(\d)", arch)
    return f"{arch}a" if plain and int(plain.group(1)) >= 9 else arch


def _located(step: Any, solution: Path) -> Any:
    """Run `step`; a failure of the DSL's build becomes CompileFailed with its own lines (file,
    line, error), one of the solution's host code propagates as it is."""
    from cutlass.base_dsl.common import DSLBaseError

    try:
        return step()
    except DSLBaseError as e:
        raise CompileFailed(compiler_lines(_ANSI.sub("", str(e)), keep=16)) from None
    except Exception as e:
        frames = traceback.extract_tb(e.__traceback__)
        if not any(f.name == "generate_mlir" and "cutlass" in f.filename for f in frames):
            raise
        own = [f for f in frames if Path(f.filename).resolve() == solution.resolve()]
        where = f"{solution.name}:{own[-1].lineno} in {own[-1].name}: " if own else ""
        text = f"{where}{type(e).__name__}: {e}"
        if own and own[-1].line:
            text += f"\n    {own[-1].line}"
        raise CompileFailed(compiler_lines(text)) from None


@contextmanager
def _building(arch: str, dump: Path) -> Iterator[list[_Build]]:
    """CuTe DSL set to build for `arch` and keep its stages in `dump`, every launch recorded
    instead of run; everything it changed is put back on exit."""
    import cutlass.cute.runtime as cute_runtime
    import torch
    from cutlass.base_dsl.jit_executor import JitCompiledFunction
    from cutlass.cutlass_dsl import CuTeDSL
    from cutlass.cutlass_dsl.cutlass import KernelLauncher

    from rung.backends import cute_cache
    from rung.backends.cute_fake import OnCuda

    dsl = CuTeDSL._get_dsl()
    envar = dsl.envar
    # Build for `arch`, keep the clean MLIR, PTX and CUBIN where they can be read back.
    settings = [
        (envar, "_arch", arch),
        (envar, "keep_ptx", True),
        (envar, "keep_cubin", True),
        (envar, "keep_ir_clean", True),
        (envar, "dump_dir", str(dump)),
    ]
    builds: list[_Build] = []
    launched: list[tuple[str, str, int]] = []
    clock = [time.perf_counter()]

    def record(compiled: Any) -> None:
        now = time.perf_counter()
        builds.append(_Build(compiled, list(launched), now - clock[0]))
        launched.clear()
        clock[0] = now

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original_launch(self, *args, **kwargs)
        smem = kwargs.get("smem")
        launched.append((self.funcBody.__name__, self._launch_name, smem if isinstance(smem, int) else 0))
        return result

    def tensor_init(self: Any, tensor: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(tensor, torch.Tensor) and fake_cuda.without_memory(tensor):
            self._rung_described = tensor = OnCuda(tensor)  # held as long as the DSL's tensor
        original_tensor_init(self, tensor, *args, **kwargs)

    def compile_cached(self: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
        digest = cute_cache.key(module, arch, envar)
        found = cute_cache.lookup(digest, record)
        if found is not None:
            return found
        compiled = original_compile(self, module, *args, **kwargs)
        with contextlib.suppress(OSError):  # a cache not writable costs the next check a build, no more
            cute_cache.keep(digest, compiled, dump)
        return compiled

    original_launch, original_tensor_init = KernelLauncher.launch, cute_runtime._Tensor.__init__
    original_compile = type(dsl).compile_and_cache
    # A @cute.jit function called directly builds, then calls run_compiled_program; the result of
    # cute.compile is called: both are recorded, neither runs.
    patches: list[tuple[Any, str, Any]] = [
        (KernelLauncher, "launch", launch),
        (cute_runtime._Tensor, "__init__", tensor_init),
        (JitCompiledFunction, "run_compiled_program", lambda self, exe_args: record(self)),
        (JitCompiledFunction, "__call__", lambda self, *args, **kwargs: record(self)),
        (type(dsl), "compile_and_cache", compile_cached),
        *settings,
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Cache is disabled")
            yield builds
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
        shutil.rmtree(dump, ignore_errors=True)


def _write(b: _Build, arch: str, out: Path, taken: set[str]) -> list[BuiltKernel]:
    """One BuiltKernel per kernel of the build, named after its Python function; the stages
    written once per build, under the first kernel's name."""
    compiled = b.compiled
    kernels = b.kernels or [(compiled.function_name, next(iter(compiled.kernel_info), ""), 0)]
    stem = _unique(kernels[0][0], taken)
    paths: list[str] = []
    for suffix, text in (("mlir", compiled.__mlir__), ("ptx", compiled.__ptx__)):
        if isinstance(text, str):
            (out / f"{stem}.{suffix}").write_text(text)
            paths.append(str(out / f"{stem}.{suffix}"))
    cubin = out / f"{stem}.cubin"
    cubin.write_bytes(compiled.__cubin__)
    ptx = compiled.__ptx__ if isinstance(compiled.__ptx__, str) else ""
    result = []
    for python_name, symbol, smem in kernels:
        name = stem if python_name == kernels[0][0] else _unique(python_name, taken | {stem})
        k = BuiltKernel(
            name=name,
            shared_bytes=smem,
            max_threads=_threads(ptx, symbol),
            signature={"symbol": symbol, "arch": arch},
            constexprs={"function": python_name},
            artifacts=list(paths),
            build_s=round(b.build_s, 4),
            cached=bool(getattr(compiled, "cached", False)),
        )
        result.append(describe(cubin, k, function=symbol or None))
    return result


def _threads(ptx: str, symbol: str) -> int:
    """Threads per block the PTX pins for `symbol` (`.reqntid` or `.maxntid`), 0 where it pins none."""
    entry = ptx.find(f".entry {symbol}(")
    head = ptx[entry : ptx.find("{", entry)] if entry >= 0 else ""
    found = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", head)
    if not found:
        return 0
    total = 1
    for g in found.groups():
        total *= int(g or 1)
    return total


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 1
    while f"{name}_{n}" in taken:
        n += 1
    return f"{name}_{n}"


__all__ = [
    "BACKEND",
    "EXTRA",
    "IMPORTS",
    "RUNS_ON_CPU",
    "TEMPLATE",
    "CompileFailed",
    "compile_solution",
    "owns_kernel",
    "recognises",
]
