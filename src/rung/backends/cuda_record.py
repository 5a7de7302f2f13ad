"""What a CUDA C++ solution asks torch to build: its `load_inline` and `load` calls, recorded.

`recording()` replaces `torch.utils.cpp_extension.load_inline` and `load` with recorders for the
duration: each call becomes an `Extension` (its name, the CUDA source exactly as torch would write
it to `cuda.cu`, the flags and include folders it asked for, the functions it binds) and returns
a stand-in module whose functions raise `NotBuilt`. Nothing is compiled and no GPU is needed.

`timed()` leaves them working and adds up the seconds they take: on a GPU the solution process
builds the extension at import through torch itself, and that time is a compile figure.

Where a CUDA source is a string literal of the solution, `Extension.origin` maps a line of the
`.cu` back to the line of the `.py` it came from, so nvcc's errors name the solution's own line.
"""

from __future__ import annotations

import ast
import inspect
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What torch's load_inline writes above the CUDA sources unless told `no_implicit_headers`.
IMPLICIT_CUDA_HEADERS = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
CUDA_SUFFIXES = (".cu", ".cuh")


class NotBuilt(RuntimeError):
    """A function of an extension that was recorded, not built, was called."""


@dataclass
class Piece:
    """One part of a CUDA source: its text and where its first line sits in a file of the
    solution's ('' where it was made at run time and has no line of its own)."""

    text: str
    path: str = ""
    line: int = 0


@dataclass
class Extension:
    name: str
    pieces: list[Piece] = field(default_factory=list)  # joined by newlines: the .cu torch writes
    files: list[Path] = field(default_factory=list)  # `load`: .cu files compiled where they are
    cuda_flags: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return "\n".join(p.text for p in self.pieces)

    def origin(self, line: int) -> tuple[str, int] | None:
        """The solution file and line that line `line` (1-based) of `source` came from."""
        first = 1
        for piece in self.pieces:
            count = piece.text.count("\n") + 1
            if line < first + count:
                return (piece.path, piece.line + line - first) if piece.path else None
            first += count
        return None


class _StandIn:
    """What a recorded build returns: attributes are functions that were never built."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        def not_built(*args: Any, **kwargs: Any) -> Any:
            raise NotBuilt(f"{self._name}.{attr}: the extension was recorded for compiling, not built")

        return not_built


@contextmanager
def recording(solution: Path | None) -> Iterator[list[Extension]]:
    """`load_inline` and `load` record what they are given (CUDA sources only) while inside;
    string literals of `solution` are looked up to place each inline source in it."""
    from torch.utils import cpp_extension

    literals = _string_literals(solution) if solution else {}
    found: list[Extension] = []
    originals = cpp_extension.load_inline, cpp_extension.load

    def record_inline(*args: Any, **kwargs: Any) -> Any:
        call = inspect.signature(originals[0]).bind(*args, **kwargs).arguments
        cuda = call.get("cuda_sources") or []
        cuda = [cuda] if isinstance(cuda, str) else list(cuda)
        if cuda:
            implicit = [] if call.get("no_implicit_headers") else list(IMPLICIT_CUDA_HEADERS)
            pieces = [Piece(h) for h in implicit] + [_locate(s, literals, solution) for s in cuda]
            found.append(_extension(call, pieces, []))
        return _StandIn(str(call["name"]))

    def record_load(*args: Any, **kwargs: Any) -> Any:
        call = inspect.signature(originals[1]).bind(*args, **kwargs).arguments
        sources = call["sources"]
        files = [Path(s) for s in ([sources] if isinstance(sources, str) else sources)]
        cuda = [f for f in files if f.suffix in CUDA_SUFFIXES]
        if cuda:
            found.append(_extension(call, [], cuda))
        return _StandIn(str(call["name"]))

    cpp_extension.load_inline, cpp_extension.load = record_inline, record_load
    try:
        yield found
    finally:
        cpp_extension.load_inline, cpp_extension.load = originals


class Timed:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.names: list[str] = []


@contextmanager
def timed() -> Iterator[Timed]:
    """`load_inline` and `load` work as ever, and the seconds they take are added up."""
    from torch.utils import cpp_extension

    total = Timed()
    originals = cpp_extension.load_inline, cpp_extension.load

    def timing(original: Any) -> Any:
        def build(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                total.seconds += time.perf_counter() - began
                total.names.append(str(kwargs.get("name") or (args[0] if args else "")))

        return build

    cpp_extension.load_inline, cpp_extension.load = timing(originals[0]), timing(originals[1])
    try:
        yield total
    finally:
        cpp_extension.load_inline, cpp_extension.load = originals


def _extension(call: dict[str, Any], pieces: list[Piece], files: list[Path]) -> Extension:
    functions = call.get("functions") or []
    return Extension(
        name=str(call["name"]),
        pieces=pieces,
        files=files,
        cuda_flags=[str(f) for f in call.get("extra_cuda_cflags") or []],
        include_dirs=[str(d) for d in call.get("extra_include_paths") or []],
        functions=[functions] if isinstance(functions, str) else [str(f) for f in functions],
    )


def _string_literals(solution: Path) -> dict[str, list[int]]:
    """Each string literal of the solution whose text keeps the file's lines (raw or without
    escaped newlines) -> the lines it starts on."""
    try:
        text = solution.read_text(errors="replace")
        tree = ast.parse(text)
    except (OSError, SyntaxError):
        return {}
    found: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            written = ast.get_source_segment(text, node) or ""
            if written.count("\n") == node.value.count("\n"):
                found.setdefault(node.value, []).append(node.lineno)
    return found


def _locate(text: str, literals: dict[str, list[int]], solution: Path | None) -> Piece:
    """The piece, placed in the solution where exactly one literal holds its text."""
    lines = literals.get(text, [])
    return Piece(text, str(solution), lines[0]) if solution and len(lines) == 1 else Piece(text)
