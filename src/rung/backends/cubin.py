"""What every backend does with a CUBIN once it has one: SASS, resource figures, spill count.

The tools are the nvdisasm and cuobjdump that ship in Triton's wheel (always installed with
rung), falling back to those on PATH, so no CUDA toolkit is needed to read a build.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from rung.backends.base import BuiltKernel


def tool(name: str) -> str:
    try:
        import triton

        path = str(getattr(triton.knobs.nvidia, name).path)
        if Path(path).exists():
            return path
    except Exception:
        pass
    return shutil.which(name) or name


def disassemble(cubin: Path) -> str:
    """SASS of a CUBIN, with nvdisasm (cuobjdump where nvdisasm cannot read it)."""
    done = subprocess.run(
        [tool("nvdisasm"), "-c", "-hex", str(cubin)], capture_output=True, text=True, timeout=120
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
    sass = disassemble(cubin)
    sass_path = cubin.with_suffix(".sass")
    sass_path.write_text(sass)
    for path in (cubin, sass_path):
        if str(path) not in kernel.artifacts:
            kernel.artifacts.append(str(path))
    kernel.spill_instructions = len(re.findall(r"\b(?:STL|LDL)\b", sass))
    usage = resource_usage(cubin, function)
    kernel.registers, kernel.local_bytes = usage.get("REG", 0), usage.get("LOCAL", 0)
    kernel.shared_bytes = kernel.shared_bytes or usage.get("SHARED", 0)
    return kernel
