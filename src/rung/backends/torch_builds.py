"""torch's own extension builds (`load_inline`, `load`) kept in the build cache, one folder a build.

torch builds an extension in TORCH_EXTENSIONS_DIR/<name>/ under a lock file there, and rebuilds
when its sources change: checks at once whose versions build different sources under one name
(an agent's versions keep their extension's name) write the same folder, and one loads the
other's library or none (on an H100: "gemv_rows_ext.so: cannot open shared object file" beside
its broken twin's failed build). Here every build is keyed by what decides its bytes (the
arguments as given, the contents of the files it compiles and the headers beside them, the
include folders' files by size and time, torch's and the toolkit's versions, the archs torch
targets, the host compiler) and made by torch in a staging folder no other process writes, then
published whole (`build_cache.staging`): a failed build leaves nothing, a killed one a staging
folder no reader opens (its lock inside it). A build found is imported from its folder, without
torch, so no lock is ever taken on a published build.

A call that names its own `build_directory`, or builds something other than a Python module, is
left to torch; TORCH_EXTENSIONS_DIR is each check's own (`judge/start.py`), so even those
builds are not shared.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from rung.backends import build_cache

KIND = "torch_ext"
NOT_KEYED = ("build_directory", "verbose", "keep_intermediates")  # change no byte of the build
HEADERS = (".h", ".hpp", ".cuh", ".hxx", ".inl")
MAX_STAMPED = 20000  # files of an include folder stamped into the key (CUTLASS's include: ~3000)


def install() -> None:
    """Replace `load_inline` and `load` with their keyed builds for the rest of this process."""
    from torch.utils import cpp_extension

    if not getattr(cpp_extension.load_inline, "rung_keyed", False):
        cpp_extension.load_inline = keyed(cpp_extension.load_inline, "load_inline")
    if not getattr(cpp_extension.load, "rung_keyed", False):
        cpp_extension.load = keyed(cpp_extension.load, "load")


def keyed(original: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """`original` (torch's load_inline or load), each build in a folder of its own key."""
    signature = inspect.signature(original)

    # wraps: what inspects the signature later (cuda_record's recorder binds a call's arguments by
    # name) sees torch's, not (*args, **kwargs)
    @functools.wraps(original)
    def build(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        given = dict(call.arguments)
        if (
            given.get("build_directory")
            or not given.get("is_python_module", True)
            or given.get("is_standalone")
        ):
            return original(**given)  # torch's way, in this check's own TORCH_EXTENSIONS_DIR
        digest = key(kind, given)
        found = build_cache.lookup(KIND, digest)
        if found is not None:
            return _import(found)
        with build_cache.staging(KIND, digest) as (work, meta):
            module = original(**{**given, "build_directory": str(work)})
            meta.update(module=module.__name__, library=Path(str(module.__file__)).name)
        module.__file__ = str(build_cache.folder(KIND, digest) / str(meta["library"]))  # where it lies now
        return module

    build.rung_keyed = True  # type: ignore[attr-defined]
    return build


def key(kind: str, given: dict[str, Any]) -> str:
    """The build cache's key of one call: what decides the bytes of what torch builds."""
    arguments = {k: v for k, v in given.items() if k not in NOT_KEYED}
    if kind == "load":
        sources = arguments.pop("sources")
        arguments["sources"] = _contents([sources] if isinstance(sources, str) else list(sources))
    includes = arguments.get("extra_include_paths") or []
    stamps = [_stamps(Path(d)) for d in ([includes] if isinstance(includes, str) else includes)]
    return build_cache.key(KIND, kind, arguments, stamps, _toolchain())


def _contents(files: list[str]) -> list[tuple[str, str]]:
    """Each source file's text, and each header's beside them (what its includes most likely read)."""
    paths = [Path(f) for f in files]
    beside = {h for p in paths if p.parent.is_dir() for h in p.parent.iterdir() if h.suffix in HEADERS}
    return [(str(p), p.read_text(errors="replace") if p.is_file() else "") for p in [*paths, *sorted(beside)]]


def _stamps(folder: Path) -> list[tuple[str, int, int]]:
    """(path, size, modification time) of the files beneath an include folder, the first MAX_STAMPED."""
    found: list[tuple[str, int, int]] = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if len(found) >= MAX_STAMPED:
            break
        if path.is_file():
            stat = path.stat()
            found.append((str(path.relative_to(folder)), stat.st_size, stat.st_mtime_ns))
    return found


def _toolchain() -> list[str]:
    """torch's version and CUDA's, the archs torch builds for here, the host compiler, nvcc's version."""
    import torch
    from torch.utils import cpp_extension

    from rung.backends import cuda_nvcc

    try:
        archs = cpp_extension._get_cuda_arch_flags()  # TORCH_CUDA_ARCH_LIST, else the GPUs here
    except Exception:  # no GPU and no list: nothing CUDA can be built anyway
        archs = []
    try:
        nvcc = cuda_nvcc.toolkit().version
    except Exception:
        nvcc = ""
    return [
        torch.__version__,
        str(torch.version.cuda),
        *archs,
        cpp_extension.get_cxx_compiler(),
        nvcc,
        sys.version,
    ]


def _import(found: Path) -> ModuleType:
    """The module a published build holds, imported from its folder."""
    meta = build_cache.meta(found)
    name, library = str(meta["module"]), str(meta["library"])
    if Path(library).name != library or not name.isidentifier():
        raise ImportError(f"build cache entry {found} names no library of its own: {library!r}")
    spec = importlib.util.spec_from_file_location(name, found / library)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {library} from {found}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
