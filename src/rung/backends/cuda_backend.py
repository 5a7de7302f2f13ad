"""CUDA C++ solutions: kernels torch builds through `torch.utils.cpp_extension` (`load_inline`
with `cuda_sources`, or `load` of .cu files), built here with nvcc for the target GPU.

Building needs no GPU and no CUDA build of torch. The solution is imported with `load_inline`
and `load` recording what they are given (`cuda_record`); each CUDA source, exactly as torch
would write it (with the headers load_inline adds above it), is built by nvcc for `RUNG_ARCH`
with torch's own flags (`cuda_nvcc`: which stand-in headers make torch's includes parse on a
CPU-only machine, and what that costs). The source is built as written, once: unlike a Triton
kernel, a CUDA kernel is not specialised per call, so the calls are not needed to build it (they
are run, recorder still in place, only when the import itself built nothing: a solution that
builds on its first call). Each kernel of the CUBIN is then described (SASS, registers, local
memory, spills; `cubin.describe`), `-Xptxas -v` giving the shared memory and a cross-check of
the registers, and `.maxntid` in the PTX the launch bound. `<stem>.cu`, `.ptx`, `.cubin`,
`.sass` and `.ptxas.log` are written to the output folder, the stem being the extension's name.

Builds are kept in the build cache (`build_cache`), keyed by the source, the flags, the arch,
nvcc's and torch's versions: a second compile of an unchanged solution copies the files back,
`cached` and `build_s` saying so. A compile error is CompileFailed with nvcc's own error lines,
the `.cu` line mapped to the solution's where the source is a string literal of it.

The host code runs on fake CUDA (`fake_cuda`): device guards, stream handles and CUDA tensors of
the inputs' shapes work without a GPU, so an extension built on the first call, under
`with torch.cuda.device(x.device):`, is reached and built.

On a GPU, the solution process builds the extension through torch's own load_inline (a C++
compiler, nvcc and ninja), each build in a build-cache folder of its own key (`torch_builds`),
and the import's build time is reported by the compile rung too (`import_builds`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from rung.backends import build_cache, cuda_nvcc, cuda_record, fake_cuda, torch_builds
from rung.backends.base import BuiltKernel, Call, CompileFailed
from rung.backends.cubin import describe, functions
from rung.spec import Backend

BACKEND = Backend.CUDA
IMPORTS = ("torch.utils.cpp_extension",)
EXTRA = ""  # the toolkit comes from the system (nvcc on PATH), ninja with torch's build
RUNS_ON_CPU = False
CACHE_KIND = "cuda"

TEMPLATE = '''\
"""A first version in CUDA C++: one thread per element, built by torch's load_inline."""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>

__global__ void scale_shift_kernel(const float* __restrict__ x, float* __restrict__ out,
                                   float scale, float shift, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * scale + shift;
}

void scale_shift(const float* x, float* out, float scale, float shift, long n, cudaStream_t stream) {
    const int threads = 256;
    scale_shift_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(
        x, out, scale, shift, n);
}
"""

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

void scale_shift(const float* x, float* out, float scale, float shift, long n, cudaStream_t stream);

void launch(torch::Tensor x, torch::Tensor out, double scale, double shift) {
    if (x.numel() == 0) return;
    scale_shift(x.data_ptr<float>(), out.data_ptr<float>(), (float)scale, (float)shift, x.numel(),
                c10::cuda::getCurrentCUDAStream());
}
"""

ext = load_inline(
    "scale_shift_ext", cpp_sources=CPP, cuda_sources=CUDA, functions=["launch"], no_implicit_headers=True
)


def custom_kernel(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    ext.launch(x, out, scale, shift)
    return out
'''


def owns_kernel(name: str) -> bool:
    """A CUDA C++ kernel is named as C++ names it: mangled (`_Z...`) or demangled with its
    parameter list (`add_kernel(float const*, ...)`), which Triton's names never have; torch's
    and its libraries' own kernels are not the solution's."""
    if re.match(r"(void )?(at::|c10::|cutlass|cublas|sm\d+_xmma|ampere_|nvjet)", name):
        return False
    return name.startswith("_Z") or "(" in name


def recognises(name: str, built: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a kernel, by the name CUPTI gives it (mangled, or demangled with its parameters),
    is one the compile rung built from the solution's CUDA sources (`built`: its kernel figures,
    each with its C++ name and `constexprs["mangled"]`). Unlike `owns_kernel`, a library's kernel
    (cuBLAS's `gemv2T_kernel_val<...>(...)`) is never taken for the solution's."""
    short = cuda_nvcc.split_signature(name)[0]
    return any(name == k.get("constexprs", {}).get("mangled") or short == k.get("name") for k in built)


def compile_solution(solution_path: Path, calls: list[Call], arch: str, out_dir: Path) -> list[BuiltKernel]:
    """Build every CUDA source the solution gives torch, for `arch`; describe each kernel."""
    from rung.common.loader import import_file

    cuda_nvcc.arch_flags(arch)  # a bad arch fails before anything is imported
    with fake_cuda.host(arch, solution_path), cuda_record.recording(solution_path) as extensions:
        module = import_file(solution_path, "rung_solution_cuda")
        if not extensions and calls:
            _call_recording(module, calls[0])
    case = calls[0][0] if calls else {}
    out_dir.mkdir(parents=True, exist_ok=True)
    built: list[BuiltKernel] = []
    stems: set[str] = set()
    for ext in extensions:
        for stem, source, text, where in _sources(ext, out_dir, stems):
            built += _build(ext, stem, source, text, where, arch, out_dir)
    for b in built:
        b.case = case
    return built


def _call_recording(module: Any, call: Call) -> None:
    """One call with the recorder in place: a solution that builds on its first call records
    then; the stand-in function it gets raises NotBuilt, which ends the call."""
    with suppress(cuda_record.NotBuilt):
        call[1](module)


def _sources(
    ext: cuda_record.Extension, out: Path, stems: set[str]
) -> Iterator[tuple[str, Path, str, cuda_nvcc.Mapper]]:
    """(stem, file to build, text its build depends on, line mapper) per CUDA source of `ext`:
    the inline source written to `<stem>.cu`, or each .cu file given to `load`, built where it is
    so that its includes resolve (the headers beside it are part of its text)."""

    def stem_for(base: str) -> str:
        stem = base if base not in stems else f"{base}_{len(stems)}"
        stems.add(stem)
        return stem

    if ext.pieces:
        stem = stem_for(ext.name)
        path = out / f"{stem}.cu"
        path.write_text(ext.source)

        def where(file: str, line: int) -> str | None:
            if Path(file).name != path.name:
                return None
            origin = ext.origin(line)
            return f"{Path(origin[0]).name}:{origin[1]}" if origin else None

        yield stem, path, ext.source, where
    for file in ext.files:
        if not file.is_file():
            raise CompileFailed(f"{ext.name}: no CUDA source at {file}")
        stem = stem_for(ext.name if len(ext.files) == 1 else f"{ext.name}_{file.stem}")
        shutil.copyfile(file, out / f"{stem}.cu")
        headers = sorted(p for p in file.parent.iterdir() if p.suffix in (".cuh", ".h", ".hpp"))
        text = "\n".join(p.read_text(errors="replace") for p in (file, *headers))
        yield stem, file.resolve(), text, lambda name, line: None


def _build(
    ext: cuda_record.Extension,
    stem: str,
    source: Path,
    text: str,
    where: cuda_nvcc.Mapper,
    arch: str,
    out: Path,
) -> list[BuiltKernel]:
    """The kernels of one source: from the build cache, else built now and kept there."""
    import torch

    flags = [
        *cuda_nvcc.torch_flags(ext.name),
        *(f"-I{d}" for d in ext.include_dirs),
        *cuda_nvcc.without_arch(ext.cuda_flags),
    ]
    toolchain = (cuda_nvcc.toolkit().version, torch.__version__, cuda_nvcc.STAND_INS)
    digest = build_cache.key(CACHE_KIND, text, flags, arch, *toolchain)
    log = out / f"{stem}.ptxas.log"
    began = time.perf_counter()
    found = build_cache.lookup(CACHE_KIND, digest)
    if found is not None:
        for name, path in _cached_files(out, stem).items():
            shutil.copyfile(found / name, path)
    else:
        with tempfile.TemporaryDirectory(prefix="rung-nvcc-") as work:
            made = cuda_nvcc.build(source, stem, flags, arch, out, Path(work), where)
        log.write_text(made.log)
        build_cache.store(CACHE_KIND, digest, _cached_files(out, stem), {"build_s": round(made.seconds, 4)})
    seconds = round(time.perf_counter() - began, 4)  # the build or the copy, not the reading
    kernels = _describe(stem, out, log.read_text())
    for k in kernels:
        k.build_s, k.cached = seconds, found is not None
    return kernels


def _cached_files(out: Path, stem: str) -> dict[str, Path]:
    """A build's files: name in the cache -> where this compile writes it."""
    return {
        "kernel.ptx": out / f"{stem}.ptx",
        "kernel.cubin": out / f"{stem}.cubin",
        "ptxas.log": out / f"{stem}.ptxas.log",
    }


def _describe(stem: str, out: Path, log: str) -> list[BuiltKernel]:
    """One BuiltKernel per kernel of `<stem>.cubin`, named as C++ names it."""
    cubin, ptx = out / f"{stem}.cubin", (out / f"{stem}.ptx").read_text()
    mangled = functions(cubin)
    readable = cuda_nvcc.demangle(mangled)
    figures = cuda_nvcc.ptxas_figures(log)
    kernels = []
    for name in mangled:
        short, params = cuda_nvcc.split_signature(readable[name])
        k = BuiltKernel(
            name=short,
            signature={str(i): p for i, p in enumerate(params)},
            constexprs={"mangled": name},
            artifacts=[str(out / f"{stem}.{s}") for s in ("cu", "ptx", "ptxas.log")],
        )
        describe(cubin, k, name)
        ptxas = figures.get(name)
        if ptxas is not None:  # cuobjdump's SHARED adds the 1 KiB the driver reserves per block
            k.registers = k.registers or ptxas.registers
            k.shared_bytes = ptxas.shared_bytes
        if len(mangled) > 1:  # describe counted the whole CUBIN's
            k.spill_instructions = _local_ops(cubin.with_suffix(".sass").read_text(), name)
        k.max_threads = cuda_nvcc.max_threads(ptx, name, k.registers)
        kernels.append(k)
    return kernels


def _local_ops(sass: str, function: str) -> int:
    """Local-memory instructions (LDL, STL) in `function`'s part of a CUBIN's SASS."""
    parts = re.split(r"//-+ \.text\.(\S+) -+", sass)
    body = next((parts[i + 1] for i in range(1, len(parts) - 1, 2) if parts[i] == function), "")
    return len(re.findall(r"\b(?:STL|LDL)\b", body))


@contextmanager
def import_builds(solution: Path, device: str) -> Iterator[cuda_record.Timed]:
    """Around the solution process's import of a CUDA C++ solution: on a GPU torch builds its
    extensions, each keyed in the build cache from then on (`torch_builds`: an extension built
    on the first call is too), and the seconds the import's builds take are counted; without one
    the builds are recorded instead (they could not run here, and the import still finds
    `custom_kernel`). Any other solution is imported untouched."""
    from rung.backends import imported_modules

    try:
        uses = IMPORTS[0] in imported_modules(solution.read_text(errors="replace"))
    except (OSError, SyntaxError):
        uses = False  # the import itself will say what is wrong
    if not uses:
        yield cuda_record.Timed()
    elif device == "cuda":
        torch_builds.install()
        with cuda_record.timed() as total:
            yield total
    else:
        with cuda_record.recording(None):
            yield cuda_record.Timed()


__all__ = [
    "BACKEND",
    "EXTRA",
    "IMPORTS",
    "RUNS_ON_CPU",
    "TEMPLATE",
    "CompileFailed",
    "compile_solution",
    "import_builds",
    "owns_kernel",
    "recognises",
]
