"""CuTe DSL builds in the build cache: a traced module compiled once, read back after.

CuTe DSL traces the solution's Python into an MLIR module, then compiles that to PTX and CUBIN;
the second step is most of a build (0.6 of 1.0 s for the Hopper matmul on a CPU). The key is
the traced module printed without source locations (with them it would name the run's own copy
of the solution, a different path every run), the arch, the settings that change the code
(line info, compiler options) and the DSL's version: an unchanged solution called on the same
shapes traces to the same module and is not compiled again. Its own cache cannot serve here: CuTe
DSL turns it off while keeping PTX and CUBIN.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from rung.backends import build_cache

KIND = "cute"
STAGES = (("ptx", "__ptx__"), ("cubin", "__cubin__"), ("mlir", "__mlir__"))


def key(module: Any, arch: str, envar: Any) -> str:
    text = module.operation.get_asm(enable_debug_info=False)
    return build_cache.key(
        KIND, text, arch, envar.lineinfo, envar.compiler_opt, metadata.version("nvidia-cutlass-dsl")
    )


def keep(digest: str, compiled: Any, scratch: Path) -> None:
    """Store `compiled`'s stages under `digest` (files written to `scratch` first)."""
    files: dict[str, Path] = {}
    for suffix, attribute in STAGES:
        value = getattr(compiled, attribute)
        if value is None:
            continue
        path = scratch / f"{digest[:16]}.{suffix}"
        if isinstance(value, bytes):
            path.write_bytes(value)
        else:
            path.write_text(value)
        files[suffix] = path
    build_cache.store(
        KIND, digest, files, {"function_name": compiled.function_name, "kernels": list(compiled.kernel_info)}
    )


class CachedBuild:
    """A build read back from the cache, standing where CuTe DSL's compiled function would: its
    stages as the same attributes; running it or calling it is reported to `launched`."""

    cached = True

    def __init__(self, folder: Path, launched: Callable[[Any], None]) -> None:
        found = build_cache.meta(folder)
        kernels = found["kernels"]
        self.function_name = str(found["function_name"])
        self.kernel_info: dict[str, dict[str, Any]] = (
            {str(k): {} for k in kernels} if isinstance(kernels, list) else {}
        )
        for suffix, attribute in STAGES:
            path = folder / suffix
            value: Any = None
            if path.is_file():
                value = path.read_bytes() if suffix == "cubin" else path.read_text()
            setattr(self, attribute, value)
        self._launched = launched

    def seal_specialization(self, spec: Any) -> None:
        """CuTe DSL hands a fresh build its trace's record; a cached one has nothing to check."""

    def run_compiled_program(self, exe_args: Any) -> None:
        self._launched(self)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._launched(self)


def lookup(digest: str, launched: Callable[[Any], None]) -> CachedBuild | None:
    found = build_cache.lookup(KIND, digest)
    return CachedBuild(found, launched) if found is not None else None
