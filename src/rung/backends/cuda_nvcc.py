"""nvcc, as the CUDA C++ backend drives it: where the toolkit is, the flags, the errors, ptxas -v.

One source is built with one nvcc command: `-cubin -keep` for the target arch (`sm_90a` gives
`-gencode arch=compute_90a,code=sm_90a`), `-lineinfo -Xptxas -v`, so the PTX is the one the CUBIN
was assembled from and ptxas reports each kernel's registers, spills and shared memory.

The flags are those torch's own build gives a `cuda.cu` (its include folders, C++17, its
`__CUDA_NO_HALF_*` defines, the extension's name), so a source that includes torch headers
parses here as it will on the GPU. Two gaps of a CPU-only machine are filled by stand-in headers,
searched after every real include folder so they are used only where the real one is missing:
torch's CPU wheel lacks the headers its CUDA build generates (`c10/cuda/impl/cuda_cmake_macros.h`,
`ATen/cuda/CUDAConfig.h`), and a toolkit of nvcc alone lacks cuBLAS, cuSPARSE and cuSOLVER, whose
handle and status types `ATen/cuda/CUDAContext.h` names. The stand-ins declare types only: host
code of the source that calls those libraries fails here, not on the GPU. Device code needs none
of them. Torch's headers are heavy: a source that includes `<torch/types.h>` (load_inline adds
it unless `no_implicit_headers=True`) takes about 11 s to build on one core, one that does not
well under a second.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rung.backends.base import CompileFailed, compiler_lines

STAND_INS = {
    "c10/cuda/impl/cuda_cmake_macros.h": "#define C10_CUDA_BUILD_SHARED_LIBS\n",
    "ATen/cuda/CUDAConfig.h": "".join(
        f"#define {flag}() 0\n"
        for flag in (
            "AT_CUDNN_ENABLED",
            "AT_CUSPARSELT_ENABLED",
            "AT_HIPSPARSELT_ENABLED",
            "AT_ROCM_ENABLED",
            "AT_MAGMA_ENABLED",
        )
    )
    + '#define NVCC_FLAGS_EXTRA ""\n',
    "cublas_v2.h": "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n"
    "typedef struct cublasContext* cublasHandle_t;\n",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusparse.h": "typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\n"
    "typedef struct cusparseContext* cusparseHandle_t;\n"
    "const char* cusparseGetErrorString(cusparseStatus_t);\n",
    "cusolverDn.h": "typedef struct cusolverDnContext* cusolverDnHandle_t;\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 }"
    " cusolverStatus_t;\n",
}
# Flags that choose the arch: rung builds for RUNG_ARCH, whatever the source asked of torch.
_ARCH_FLAGS = ("-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code")


class NoToolkit(Exception):
    """nvcc is not on this machine: nothing can be built (the compile rung is SKIPPED)."""


@dataclass(frozen=True)
class Toolkit:
    nvcc: str
    root: str  # the toolkit's folder (bin/, include/), as nvcc reports it
    version: str  # nvcc --version's last line: "Build cuda_13.0.r13.0/compiler.36424714_0"


@cache
def toolkit() -> Toolkit:
    """nvcc on PATH (else the usual /usr/local/cuda), its folder and version."""
    found = shutil.which("nvcc") or shutil.which("nvcc", path="/usr/local/cuda/bin")
    if found is None:
        raise NoToolkit("nvcc not found (the CUDA toolkit): put its bin folder on PATH")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60).stdout
    dry = subprocess.run([found, "--dryrun", "-c", "x.cu"], capture_output=True, text=True, timeout=60)
    here = re.search(r"_HERE_=(\S+)", dry.stdout + dry.stderr)
    root = str(Path(here.group(1)).parent) if here else str(Path(found).resolve().parents[1])
    return Toolkit(found, root, version.strip().splitlines()[-1] if version.strip() else "")


def toolkit_dirs() -> list[str]:
    """Folders a solution process must read to build with nvcc: the toolkit's; none where absent."""
    try:
        return [toolkit().root]
    except (NoToolkit, OSError, subprocess.SubprocessError):
        return []


def arch_flags(arch: str) -> list[str]:
    """`sm_90a` -> `-gencode arch=compute_90a,code=sm_90a`."""
    named = re.fullmatch(r"sm_(\d+[a-z]?)", arch)
    if not named:
        raise CompileFailed(f"RUNG_ARCH={arch!r} is not an arch nvcc knows: write it as sm_90a")
    return ["-gencode", f"arch=compute_{named.group(1)},code=sm_{named.group(1)}"]


def without_arch(flags: list[str]) -> list[str]:
    """`flags` less those that choose an arch (and the value that follows a bare one)."""
    kept: list[str] = []
    skip = False
    for flag in flags:
        if skip:
            skip = False
        elif flag in _ARCH_FLAGS:
            skip = True
        elif not flag.startswith(tuple(f + "=" for f in _ARCH_FLAGS)):
            kept.append(flag)
    return kept


def torch_flags(name: str) -> list[str]:
    """What torch's build gives a CUDA source of extension `name`, bar the arch and the stand-ins."""
    import torch
    from torch.utils import cpp_extension

    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    return [
        "-std=c++17",
        *(f for d in includes for f in ("-isystem", d)),
        f"-DTORCH_EXTENSION_NAME={name}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        *cpp_extension.COMMON_NVCC_FLAGS,
    ]


def write_stand_ins(folder: Path) -> Path:
    for name, text in STAND_INS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#pragma once\n// rung: a compile-only stand-in for a header missing here\n{text}")
    return folder


@dataclass
class Built:
    ptx: Path
    cubin: Path
    log: str  # nvcc's and ptxas's output: the -Xptxas -v figures
    seconds: float


Mapper = Callable[[str, int], str | None]  # (file nvcc named, line) -> "file.py:LINE", or None


def build(
    source: Path, stem: str, flags: list[str], arch: str, out: Path, work: Path, where: Mapper
) -> Built:
    """nvcc `source` to `out/<stem>.cubin` and `.ptx`; CompileFailed with the lines that matter."""
    nvcc = toolkit().nvcc
    keep = work / "keep"
    keep.mkdir(parents=True, exist_ok=True)
    stand_ins = write_stand_ins(work / "stand_ins")
    cubin = out / f"{stem}.cubin"
    command = [
        nvcc,
        *flags,
        "-isystem",
        str(stand_ins),
        *arch_flags(arch),
        "-lineinfo",
        "-Xptxas",
        "-v",
        "-cubin",
        "-keep",
        "--keep-dir",
        str(keep),
        "-o",
        str(cubin),
        str(source),
    ]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=work)
    seconds = time.perf_counter() - began
    log = done.stdout + done.stderr
    if done.returncode != 0 or not cubin.is_file():
        raise CompileFailed(errors(log, where) or compiler_lines(log))
    ptx = out / f"{stem}.ptx"
    made = next(iter(keep.glob("*.ptx")), None)
    if made is None:
        raise CompileFailed(f"nvcc kept no PTX for {source.name}")
    shutil.copyfile(made, ptx)
    return Built(ptx, cubin, log, seconds)


_EDG = re.compile(r"^(?P<file>\S[^()]*?)\((?P<line>\d+)\): (?P<rest>.*)$")  # x.cu(12): error: ...
_GCC = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)? (?P<rest>.*)$")  # x.cu:3:10: fatal error: ...
_ERROR = re.compile(r"\b(?:error|fatal|catastrophic)\b", re.IGNORECASE)
_NOISE = re.compile(
    r"^\d+ errors? detected in the compilation|^compilation terminated|^Remark", re.IGNORECASE
)


def errors(log: str, where: Mapper) -> str:
    """nvcc's error lines (each with the code line it quotes), their files and lines mapped by
    `where`; warnings, notes and ptxas's info dropped."""
    kept: list[str] = []
    keeping = False
    for raw in log.splitlines():
        line = raw.rstrip()
        located = _EDG.match(line) or _GCC.match(line)
        if located or line.startswith("ptxas"):
            keeping = bool(_ERROR.search(located.group("rest") if located else line))
            if keeping and located:
                file, number = located.group("file"), int(located.group("line"))
                mapped = where(file, number) or f"{Path(file).name}:{number}"
                line = f"{mapped}: {located.group('rest')}"
            if keeping:
                kept.append(line)
        elif keeping and line.strip() and not _NOISE.search(line.strip()):
            kept.append(line)
        elif not line.strip():
            keeping = False
    return compiler_lines("\n".join(kept))


@dataclass
class PtxasFigures:
    registers: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


def ptxas_figures(log: str) -> dict[str, PtxasFigures]:
    """Per kernel (mangled name), what `ptxas -v` reported."""
    figures: dict[str, PtxasFigures] = {}
    current: PtxasFigures | None = None
    for line in log.splitlines():
        named = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if named:
            current = figures.setdefault(named.group(1), PtxasFigures())
            continue
        if current is None:
            continue
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if frame:
            current.stack_bytes, current.spill_store_bytes, current.spill_load_bytes = map(
                int, frame.groups()
            )
        used = re.search(r"Used (\d+) registers", line)
        if used:
            current.registers = int(used.group(1))
            smem = re.search(r"(\d+) bytes smem", line)
            current.shared_bytes = int(smem.group(1)) if smem else 0
    return figures


def max_threads(ptx: str, function: str, registers: int) -> int:
    """The most threads a block of `function` may have: its `__launch_bounds__` (`.maxntid` in
    the PTX) where declared, else what its registers allow of a 64K-register SM (warps take
    registers in units of 256), at most 1024."""
    entry = re.search(rf"\.entry\s+{re.escape(function)}\s*\(", ptx)
    if entry:
        directives = ptx[ptx.find(")", entry.end()) : ptx.find("{", entry.end())]
        bound = re.search(r"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", directives)
        if bound:
            x, y, z = (int(g) if g else 1 for g in bound.groups())
            return x * y * z
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    return min(1024, 65536 // per_warp * 32)


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> readable C++ names, with cu++filt (or c++filt); unchanged where neither is here."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if tool is None or not names:
        return {n: n for n in names}
    done = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=60)
    readable = done.stdout.splitlines()
    if done.returncode != 0 or len(readable) != len(names):
        return {n: n for n in names}
    return dict(zip(names, readable, strict=True))


def split_signature(readable: str) -> tuple[str, list[str]]:
    """`void k<256>(float const*, int)` -> (`k<256>`, [`float const*`, `int`])."""
    text = readable.removeprefix("void ")
    depth, start, parts, head = 0, -1, [], text
    for i, ch in enumerate(text):
        if ch in "<(":
            if ch == "(" and depth == 0 and start < 0:
                head, start = text[:i], i + 1
            depth += 1
        elif ch in ">)":
            depth -= 1
            if depth == 0 and ch == ")" and start >= 0:
                parts.append(text[start:i].strip())
                break
        elif ch == "," and depth == 1 and start >= 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return head.strip(), [p for p in parts if p]
