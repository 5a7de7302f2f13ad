"""What every backend does with a CUBIN once it has one: SASS, resource figures, spill count.

The SASS is disassembled once, with line info (`-gi`): `.sass` is that text without the line
comments (byte for byte what nvdisasm prints without them), `.sass_lineinfo` keeps them where
the build has line info (Triton always; nvcc with `-lineinfo`, as the CUDA backend builds).

The tools are the nvdisasm and cuobjdump that ship in Triton's wheel (always installed with
rung), falling back to those on PATH, so no CUDA toolkit is needed to read a build.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from rung.backends.base import BuiltKernel

LINE_INFO = re.compile(r'^[ \t]*//## File ".*\n', re.MULTILINE)
LINED_SUFFIX = ".sass_lineinfo"  # SASS with nvdisasm's line comments, beside the plain .sass


def tool(name: str) -> str:
    try:
        import triton

        path = str(getattr(triton.knobs.nvidia, name).path)
        if Path(path).exists():
            return path
    except Exception:
        pass
    return shutil.which(name) or name


def can_disassemble() -> bool:
    """Whether nvdisasm is here (Triton's, or the toolkit's on PATH)."""
    found = tool("nvdisasm")
    return Path(found).is_file() or shutil.which(found) is not None


def sass_texts(cubin: Path) -> tuple[str, str]:
    """The SASS of a CUBIN without and with line info (the two are equal where the build kept none)."""
    lined = disassemble(cubin, line_info=True)
    return LINE_INFO.sub("", lined), lined  # the plain one: the same text nvdisasm gives without -gi


def disassemble(cubin: Path, line_info: bool = False) -> str:
    """SASS of a CUBIN, with nvdisasm (cuobjdump where nvdisasm cannot read it). With
    `line_info`, nvdisasm's `//## File "...", line N` comments before the instructions of each
    source line (`inlined at` where a function was inlined), where the build kept line info."""
    done = subprocess.run(
        [tool("nvdisasm"), "-c", "-hex", *(["-gi"] if line_info else []), str(cubin)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        done = subprocess.run(
            [tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, timeout=120
        )
    return done.stdout


def resource_usage(cubin: Path, function: str | None = None) -> dict[str, int]:
    """cuobjdump's figures (REG, SHARED, LOCAL, STACK) of `function`, or of the first function."""
    done = subprocess.run(
        [tool("cuobjdump"), "--dump-resource-usage", str(cubin)], capture_output=True, text=True, timeout=60
    )
    figures: dict[str, int] = {}
    current = None
    for line in done.stdout.splitlines():
        named = re.search(r"Function ([^\s:]+)", line)
        if named:
            current = named.group(1)
            continue
        if function is not None and current != function:
            continue
        for key, value in re.findall(r"\b(REG|SHARED|LOCAL|STACK):(\d+)", line):
            figures.setdefault(key, int(value))
        if figures and function is None:
            break
    return figures


def functions(cubin: Path) -> list[str]:
    """The (mangled) names of the kernels a CUBIN holds."""
    done = subprocess.run(
        [tool("cuobjdump"), "--dump-resource-usage", str(cubin)], capture_output=True, text=True, timeout=60
    )
    return re.findall(r"Function ([^\s:]+)", done.stdout)


def describe(cubin: Path, kernel: BuiltKernel, function: str | None = None) -> BuiltKernel:
    """Write `cubin`'s SASS beside it and fill `kernel`'s registers, local bytes and spill count
    (shared memory too where the build did not say: cuobjdump gives the static part)."""
    sass, lined = sass_texts(cubin)
    sass_path = cubin.with_suffix(".sass")
    sass_path.write_text(sass)
    kept = [cubin, sass_path]
    if lined != sass:  # the dump rung interleaves it with the solution's source
        kept.append(cubin.with_suffix(LINED_SUFFIX))
        kept[-1].write_text(lined)
    for path in kept:
        if str(path) not in kernel.artifacts:
            kernel.artifacts.append(str(path))
    kernel.spill_instructions = len(re.findall(r"\b(?:STL|LDL)\b", sass))
    usage = resource_usage(cubin, function)
    kernel.registers, kernel.local_bytes = usage.get("REG", 0), usage.get("LOCAL", 0)
    kernel.shared_bytes = kernel.shared_bytes or usage.get("SHARED", 0)
    return kernel
