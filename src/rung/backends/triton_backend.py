"""Triton solutions: count their launches, and build every kernel they launch for the target GPU.

Building needs no GPU. The solution is imported a second time with Triton in JIT mode, and called
once with `JITFunction.run` replaced: each launch is specialised exactly as Triton would (the same
binder, so pointer alignment and integer specialisation match), compiled for the target
(`RUNG_ARCH`, sm_90 by default) and not run. Every stage Triton keeps (TTIR, TTGIR, LLIR, PTX,
CUBIN) is written out, SASS is disassembled from the CUBIN, and the resource figures (registers,
shared memory, local memory, spill instructions) are read from the CUBIN with cuobjdump.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rung.backends.base import BuiltKernel, Call, CompileFailed, compiler_lines
from rung.backends.cubin import describe
from rung.spec import Backend

BACKEND = Backend.TRITON
IMPORTS = ("triton",)
EXTRA = ""
RUNS_ON_CPU = True  # through Triton's interpreter
STAGES = ("ttir", "ttgir", "llir", "ptx")

TEMPLATE = '''\
"""A first version in Triton: one program per block of BLOCK elements, the tail masked."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, scale, shift, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * scale + shift, mask=mask)


def custom_kernel(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = 1024
    scale_shift_kernel[(triton.cdiv(n, block),)](x, out, scale, shift, n, BLOCK=block)
    return out
'''


class Launches:
    """Counts Triton kernel launches, interpreted or compiled, from the moment it is installed.
    A launch over an empty grid runs no program and is not counted. While `suppress` is set,
    launches are counted and not run (the guard's test of whether a kernel does any work). While
    `perturb` holds a seed, every value an interpreted kernel stores is changed, each element by
    its own amount (`perturbed`): the guard's test that the answer flows through the kernels'
    stores element by element, not through one gate value."""

    def __init__(self) -> None:
        self.count = 0
        self.suppress = False
        self.perturb: int | None = None
        self._stored = 0  # elements stored while perturbing: each one's amount differs

    def install(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction, InterpreterBuilder
        from triton.runtime.jit import JITFunction

        for cls in (JITFunction, InterpretedFunction):
            original = cls.run

            def counted(fn_self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if not kwargs.get("warmup") and _programs(fn_self, args, kwargs) != 0:
                    self.count += 1
                    if self.suppress:
                        return None
                return _original(fn_self, *args, **kwargs)

            cls.run = counted
        # Every store the interpreter makes (plain, block pointer, descriptor) ends in
        # create_masked_store; atomics carry their value through create_atomic_rmw. Only
        # floating-point atomics are perturbed (accumulations, a split-K's): integer ones are
        # tickets, flags and locks, and a changed ticket leaves a look-back spinning forever.
        store, rmw = InterpreterBuilder.create_masked_store, InterpreterBuilder.create_atomic_rmw

        def masked_store(builder: Any, ptrs: Any, value: Any, *rest: Any) -> Any:
            return store(builder, ptrs, self._changed(value), *rest)

        def atomic_rmw(builder: Any, op: Any, ptr: Any, value: Any, *rest: Any) -> Any:
            floating = value.data.dtype.kind == "f"
            return rmw(builder, op, ptr, self._changed(value) if floating else value, *rest)

        InterpreterBuilder.create_masked_store = masked_store
        InterpreterBuilder.create_atomic_rmw = atomic_rmw

    def _changed(self, value: Any) -> Any:
        if self.perturb is None:
            return value
        data, self._stored = perturbed(value.data, self.perturb, self._stored)
        return type(value)(data, value.dtype, value.attr)

    def start_perturbing(self, seed: int) -> None:
        self.perturb, self._stored = seed, 0


def perturbed(data: Any, seed: int, start: int) -> tuple[Any, int]:
    """`data` (a numpy array of stored values) with each element changed by its own amount, and
    the running count of elements after it. Floats: (v + 1) * f - 1 with f in [1.5, 2.5) from a
    golden-ratio sequence over the running element index (so no two neighbours share a factor, a
    zero changes too); integers (and bfloat16 and fp8, which the interpreter stores as integer
    bits) plus 1..61; booleans flipped."""
    import numpy as np

    flat = np.asarray(data)
    k = np.arange(start, start + flat.size, dtype=np.float64).reshape(flat.shape)
    u = np.mod((k + seed % 1000) * 0.6180339887498949, 1.0)
    if flat.dtype == np.bool_:
        out = ~flat
    elif np.issubdtype(flat.dtype, np.integer):
        out = flat + (1 + (u * 61).astype(flat.dtype))
    elif np.issubdtype(flat.dtype, np.floating):
        f = (1.5 + u).astype(flat.dtype)
        out = ((flat + 1) * f - 1).astype(flat.dtype)
    else:
        out = flat
    return out, start + flat.size


def _programs(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """How many programs a launch runs (grid product), or None when the grid cannot be read."""
    grid: Any = kwargs.get("grid")
    try:
        if callable(grid):
            grid = grid({**dict(zip(fn.arg_names, args, strict=False)), **kwargs})
        sizes = [int(g) for g in grid]
    except Exception:
        return None
    total = 1
    for g in sizes:
        total *= g
    return total


def owns_kernel(name: str) -> bool:
    """Triton names a kernel after its function; nothing in the name marks it as Triton's, so a
    kernel is Triton's when it is none of torch's (at::, void at::native, cutlass, cublas) and
    not mangled as C++ names are (`_Z...`: Triton never mangles)."""
    return not re.match(r"(void )?(_Z|at::|cutlass|cublas|sm\d+_xmma|ampere_|nvjet|triton_poi_fused)", name)


def recognises(name: str, built: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a kernel, by the name CUPTI gives it, is one the compile rung built from the
    solution's `@triton.jit` functions (`built`: its kernel figures): Triton names the kernel after
    its function, so the function's name decides, and a library's name (a C++ kernel's mangled
    one, which a Python identifier can spell) is never the solution's whatever it claims built."""
    return owns_kernel(name) and any(name == k.get("name") for k in built)


def declared(source: str) -> list[dict[str, Any]]:
    """The kernels a solution's source declares, as the compile rung's figures name them: each
    function decorated with Triton's `jit` (`@triton.jit`, `@jit`, called or not, under any
    autotune or heuristics), read from the judge's copy of the source. What guard recognises a
    launched kernel by where compile built nothing (a kernel launched by torch.compile's
    inductor never reaches the launcher compile intercepts); a Python identifier never equals
    a library kernel's demangled name, and `_no_work` still asks that the kernel matter."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        {"name": node.name, "constexprs": {}}
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list)
    ]


def _is_jit(decorator: ast.expr) -> bool:
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(called, ast.Attribute) and called.attr == "jit") or (
        isinstance(called, ast.Name) and called.id == "jit"
    )


def compile_solution(solution_path: Path, calls: list[Call], arch: str, out_dir: Path) -> list[BuiltKernel]:
    """Build every distinct kernel the given calls launch, for `arch`; write the stages to `out_dir`.

    Each `(case, call)`: `call(module)` calls the freshly imported module's entry point once, on
    that case's inputs. A kernel specialised the same way for two cases is built once.
    """
    import triton

    from rung.common.loader import import_file

    saved = triton.knobs.runtime.interpret
    triton.knobs.runtime.interpret = False
    try:
        module = import_file(solution_path, "rung_solution_jit")
    finally:
        triton.knobs.runtime.interpret = saved
    out_dir.mkdir(parents=True, exist_ok=True)
    built: list[BuiltKernel] = []
    seen: set[str] = set()
    for case, call in calls:
        with _launches_compiled(arch) as compiled:
            call(module)
        for fn_name, kernel, options, sig, constexprs in compiled:
            if kernel.metadata.hash in seen:
                continue
            seen.add(kernel.metadata.hash)
            stem = fn_name if fn_name not in {b.name for b in built} else f"{fn_name}_{len(built)}"
            built.append(_write(kernel, stem, options, sig, constexprs, out_dir))
            built[-1].case = case
    return built


@contextmanager
def _launches_compiled(arch: str) -> Iterator[list[tuple[str, Any, Any, dict[str, str], dict[str, Any]]]]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.compiler.errors import CompilationError
    from triton.runtime.jit import JITFunction, create_function_from_signature

    capability = int(re.sub(r"\D", "", arch) or 90)
    target = GPUTarget("cuda", capability, 32)
    backend = make_backend(target)
    compiled: list[tuple[str, Any, Any, dict[str, str], dict[str, Any]]] = []
    original = JITFunction.run

    def compile_instead(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> None:
        kwargs.setdefault("debug", False)
        binder = create_function_from_signature(self.signature, self.params, backend)
        bound, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = self._pack_args(
            backend, kwargs, bound, specialization, options
        )
        try:
            kernel = triton.compile(
                ASTSource(self, signature, constexprs, attrs), target=target, options=options.__dict__
            )
        except CompilationError as e:
            raise CompileFailed(compiler_lines(str(e))) from None
        except RuntimeError as e:  # ptxas and LLVM failures
            raise CompileFailed(compiler_lines(str(e))) from None
        names = [p.name for p in self.params]
        named = {names[k[0]]: _plain(v) for k, v in constexprs.items() if len(k) == 1}
        compiled.append((self.fn.__name__, kernel, options, dict(signature), named))

    JITFunction.run = compile_instead
    try:
        yield compiled
    finally:
        JITFunction.run = original


def _write(
    kernel: Any, stem: str, options: Any, sig: dict[str, str], cx: dict[str, Any], out: Path
) -> BuiltKernel:
    b = BuiltKernel(
        name=stem,
        shared_bytes=int(kernel.metadata.shared),
        num_warps=int(options.num_warps),
        num_stages=int(options.num_stages),
        signature={k: v for k, v in sig.items() if v != "constexpr"},
        constexprs=cx,
    )
    for stage in STAGES:
        if stage in kernel.asm:
            path = out / f"{stem}.{stage}"
            path.write_text(kernel.asm[stage])
            b.artifacts.append(str(path))
    cubin = out / f"{stem}.cubin"
    cubin.write_bytes(kernel.asm["cubin"])
    return describe(cubin, b)


def _plain(v: Any) -> Any:
    return v if isinstance(v, (int, float, bool, str)) or v is None else str(v)
