"""TileLang solutions: build every kernel they compile for the target GPU, without running it.

Building needs no GPU. The solution is imported afresh and called once per case with TileLang's
compile entry point (`tilelang.compile`, which `@tilelang.jit` functions call too) replaced: each
kernel is compiled by TileLang itself for a CUDA target of the given arch, exactly as on the GPU
(lowering, its generated CUDA, nvcc with its own flags), and the solution gets back a stand-in
whose calls launch nothing. An arch without a suffix is read as TileLang reads a device of that
capability (sm_90 -> sm_90a: TileLang uses wgmma and TMA on Hopper only under sm_90a). The host
code runs on fake CUDA (`fake_cuda`: device guards, streams, synchronisation, fake CUDA tensors
of the inputs' shapes), and an error of `T.prim_func`'s frontend, which reads a kernel's body
where the host code decorates it, is CompileFailed at the solution's line.

Written per kernel: TileLang's CUDA source, PTX, CUBIN, SASS and the resource figures
(`cubin.describe`). Caching: TileLang keeps its own kernel and cubin caches (TILELANG_CACHE_DIR);
the PTX and CUBIN written here are kept in rung's build cache, keyed by the generated source,
the flags, the arch, and TileLang's and nvcc's versions, so an unchanged solution is not rebuilt.
"""

from __future__ import annotations

import re
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from rung.backends import build_cache, fake_cuda
from rung.backends.base import BuiltKernel, Call, CompileFailed, compiler_lines
from rung.backends.cubin import describe
from rung.spec import Backend

BACKEND = Backend.TILELANG
IMPORTS = ("tilelang",)
EXTRA = "tilelang"
RUNS_ON_CPU = False  # TileLang kernels run on a GPU only

TEMPLATE = '''\
"""A first version in TileLang: one block of 1024 elements per program over 256 threads, the
tail guarded. A kernel is built per length (the length is a compile-time constant here)."""

import tilelang
import tilelang.language as T
import torch


@tilelang.jit
def scale_shift(n: int, block: int = 1024):
    @T.prim_func
    def kernel(
        x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32"), scale: T.float32, shift: T.float32
    ):
        with T.Kernel(T.ceildiv(n, block), threads=256) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    out[bx * block + i] = x[bx * block + i] * scale + shift

    return kernel


def custom_kernel(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scale_shift(x.numel())(x, out, scale, shift)
    return out
'''

# A kernel's definition in TileLang's CUDA: its thread count and name.
_KERNEL_DEFINED = re.compile(r"__global__ void __launch_bounds__\((\d+)[^)]*\) (\w+)\(")


def owns_kernel(name: str) -> bool:
    """TileLang names each kernel after its prim_func with `_kernel` appended, as a plain C
    identifier (extern "C": no namespace, no template, no mangling)."""
    return re.fullmatch(r"[A-Za-z_]\w*_kernel", name) is not None


def recognises(name: str, built: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a kernel, by the name CUPTI gives it, is one the compile rung built (`built`: its
    kernel figures, each with TileLang's name for it in `constexprs["symbol"]`, the prim_func's
    name and `_kernel`, the same for every shape). Unlike `owns_kernel`, a library's kernel
    that merely ends in `_kernel` (cuBLAS's `dot_kernel`) is never taken for the solution's."""
    return any(name == k.get("constexprs", {}).get("symbol") for k in built)


def compile_solution(solution_path: Path, calls: list[Call], arch: str, out_dir: Path) -> list[BuiltKernel]:
    """Build every distinct kernel the given calls compile, for `arch`; write them to `out_dir`.

    Each `(case, call)`: `call(module)` calls the freshly imported module's entry point once, on
    that case's inputs. A kernel whose generated source is the same for two cases is built once.
    """
    from rung.common.loader import import_file

    out_dir.mkdir(parents=True, exist_ok=True)
    built: list[BuiltKernel] = []
    seen: set[str] = set()

    def keep(compiled: list[tuple[Any, float]], case: dict[str, Any]) -> None:
        for kernel, build_s in compiled:
            source = str(kernel.kernel_source)
            if source not in seen:
                seen.add(source)
                built.append(_write(kernel, source, build_s, out_dir, {b.name for b in built}))
                built[-1].case = case
        compiled.clear()

    target = target_arch(arch)
    with _compiles_for(target, solution_path) as compiled, fake_cuda.host(target, solution_path):
        module = import_file(solution_path, "rung_solution_tilelang")
        keep(compiled, {})  # kernels the module compiled as it was imported
        for case, call in calls:
            call(module)
            keep(compiled, case)
    return built


def target_arch(arch: str) -> str:
    """The arch TileLang builds for: `arch` as given where it has a suffix (sm_90a, sm_100f),
    else what TileLang picks for a device of that capability (sm_90 -> sm_90a)."""
    from tilelang.contrib import nvcc

    digits = re.fullmatch(r"sm_(\d+)", arch)
    if digits is None:
        return arch
    number = int(digits.group(1))
    return f"sm_{nvcc.get_target_arch((number // 10, number % 10))}"


@contextmanager
def _compiles_for(arch: str, solution: Path) -> Iterator[list[tuple[Any, float]]]:
    """While open, every TileLang compile builds for `arch` and hands the solution a `NotRun`;
    each build is recorded with its seconds. A TileLang error is CompileFailed with its lines."""
    import importlib

    tilelang: Any = importlib.import_module("tilelang")
    jit: Any = importlib.import_module("tilelang.jit")  # the module: `tilelang.jit` is the decorator
    language: Any = importlib.import_module("tilelang.language")

    compiled: list[tuple[Any, float]] = []
    original_compile, original_get_tir = jit.compile, jit.JITImpl.get_tir
    original_prim_func = language.prim_func

    def compile_instead(func: Any, *args: Any, **kwargs: Any) -> NotRun:
        kwargs["target"] = {"kind": "cuda", "arch": arch}
        began = time.perf_counter()
        try:
            kernel = original_compile(func, *args, **kwargs)
        except Exception as e:
            raise CompileFailed(error_lines(e, solution)) from None
        compiled.append((kernel, time.perf_counter() - began))
        return NotRun(kernel)

    def get_tir_or_fail(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original_get_tir(self, *args, **kwargs)
        except Exception as e:  # the frontend building the kernel's TIR
            raise CompileFailed(error_lines(e, solution)) from None

    def prim_func_or_fail(func: Any = None, **kwargs: Any) -> Any:
        """`T.prim_func`, whose frontend reads the kernel's body where it decorates it (in the
        host code, before any compile): a failure there is the kernel's."""
        if func is None:  # `@T.prim_func(...)`: the decorator
            return lambda f: prim_func_or_fail(f, **kwargs)
        try:
            return original_prim_func(func, **kwargs)
        except Exception as e:
            raise CompileFailed(error_lines(e, solution)) from None

    jit.compile = tilelang.compile = compile_instead
    jit.JITImpl.get_tir = get_tir_or_fail
    language.prim_func = prim_func_or_fail
    try:
        yield compiled
    finally:
        jit.compile = tilelang.compile = original_compile
        jit.JITImpl.get_tir = original_get_tir
        language.prim_func = original_prim_func


class NotRun:
    """Stands in for a built kernel in the solution's hands: a call launches nothing and returns
    empty tensors for the outputs TileLang would allocate (`out_idx`), on the inputs' device."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        params, outs = self.kernel.params, list(self.kernel.out_idx or [])
        given = [p for k, p in enumerate(params) if k not in outs]  # the caller passes these
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("meta")
        sizes: dict[str, int] = {}  # symbolic dimensions, bound by the inputs' shapes
        for p, arg in zip(given, args, strict=False):
            if isinstance(arg, torch.Tensor):
                sizes.update(
                    {str(d): n for d, n in zip(p.shape, arg.shape, strict=False) if not isinstance(d, int)}
                )
        made = [
            torch.empty(
                [d if isinstance(d, int) else sizes[str(d)] for d in params[k].shape],
                dtype=params[k].torch_dtype(),
                device=device,
            )
            for k in outs
        ]
        return None if not made else made[0] if len(made) == 1 else made

    def __getattr__(self, name: str) -> Any:  # sources, params: what a solution may inspect
        return getattr(self.kernel, name)


def error_lines(e: BaseException, solution: Path) -> str:
    """TileLang's own words for a failed build: nvcc's error lines (not the source it prints
    first, nor its warnings), a TVM check with the span it names, or the frontend's exception at
    the solution's line that raised it."""
    text = str(e)
    if "Compilation error:" in text:  # nvcc, through TileLang: the whole source, then the log
        log = text.split("Compilation error:", 1)[1].splitlines()
        kept = []
        for line, after in zip(log, [*log[1:], ""], strict=True):
            if re.search(r"\berror\b", line) and not line.startswith("Command:"):
                kept += [line, after] if after.startswith(" ") else [line]  # and the line it quotes
        return compiler_lines("\n".join(kept or log))
    frames = [
        f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == solution.resolve()
    ]
    where = f"{solution.name}:{frames[-1].lineno}: " if frames and "-->" not in text else ""
    return compiler_lines(f"{where}{type(e).__name__}: {text}")


def _write(kernel: Any, source: str, build_s: float, out: Path, taken: set[str]) -> BuiltKernel:
    defined = _KERNEL_DEFINED.search(source)
    name = defined.group(2) if defined else "kernel"
    stem = name if name not in taken else f"{name}_{len(taken)}"
    threads = int(defined.group(1)) if defined else 0
    began = time.perf_counter()
    found, cached = _device_code(kernel, source)
    files = {suffix: out / f"{stem}.{suffix}" for suffix in ("cu", "ptx", "cubin")}
    for suffix, path in files.items():
        path.write_bytes((found / f"kernel.{suffix}").read_bytes())
    b = BuiltKernel(
        name=stem,
        max_threads=threads,
        num_warps=threads // 32,
        artifacts=[str(files["cu"]), str(files["ptx"])],
        constexprs={"symbol": name},
        build_s=round(build_s + time.perf_counter() - began, 3),
        cached=cached,  # PTX and CUBIN from the build cache (TileLang's own caches answer for the rest)
    )
    b = describe(files["cubin"], b, name)  # shared bytes: the static part
    b.shared_bytes += _dynamic_shared_bytes(kernel, name)
    return b


def _device_code(kernel: Any, source: str) -> tuple[Path, bool]:
    """The build-cache folder holding `source` as kernel.cu, its PTX and its CUBIN, and whether
    it was there already. The CUBIN is TileLang's own (its compile callback, which finds it in
    TileLang's cache: the kernel was just built); the PTX is nvcc's, with TileLang's options."""
    import tilelang
    from tilelang.contrib import nvcc
    from tilelang.cuda.backend import tilelang_callback_cuda_compile
    from tilelang.transform import PassConfigKey

    configs = dict(kernel.pass_configs or {})
    if kernel.compile_flags:  # as JITKernel hands them to the callback
        given = configs.get(PassConfigKey.TL_DEVICE_COMPILE_FLAGS) or []
        configs[PassConfigKey.TL_DEVICE_COMPILE_FLAGS] = [
            *([given] if isinstance(given, str) else given),
            *kernel.compile_flags,
        ]
    digest = build_cache.key(
        source, str(kernel.target), sorted(map(str, configs.items())), tilelang.__version__, _nvcc_version()
    )
    found = build_cache.lookup("tilelang", digest)
    if found is not None:
        return found, True
    cubin = bytes(tilelang_callback_cuda_compile(source, kernel.target, configs))
    with kernel.target:
        ptx = nvcc.get_ptx_from_source(source, compile_flags=kernel.compile_flags)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        (staging / "kernel.cu").write_text(source)
        (staging / "kernel.ptx").write_text(ptx)
        (staging / "kernel.cubin").write_bytes(cubin)
        files = {p.name: p for p in staging.iterdir()}
        return build_cache.store("tilelang", digest, files, {"target": str(kernel.target)}), False


@cache
def _nvcc_version() -> str:
    from tilelang.contrib import nvcc

    return ".".join(map(str, nvcc.get_cuda_version()))


def _dynamic_shared_bytes(kernel: Any, name: str) -> int:
    """The dynamic shared memory TileLang launches `name` with: the last constant the host code
    packs before looking the kernel up (grid, block, then shared bytes). Zero for kernels that
    declare none."""
    if "buf_dyn_shmem" not in str(kernel.kernel_source):
        return 0
    host = str(kernel.get_host_source())
    before = host.split(f'"{name}"', 1)[0]
    constants = re.findall(r"v_int64\) = \(\(int64_t\)(\d+)\)", before)
    return int(constants[-1]) if constants else 0
