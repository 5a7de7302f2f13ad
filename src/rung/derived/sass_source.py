"""SASS with the solution's source: each source line followed by the instructions built from it,
read from nvdisasm's line info (`.sass_lineinfo`, kept at compile), with the lines that became
the most instructions listed first and, where Nsight Compute's source counters are given, the
hottest lines marked (controller side, pure text).

The line comments name files by the paths the compiler saw, which are not where the source the
user wrote is: Triton names the solution's copy in the run folder of the check that first built
the kernel (the compile cache keeps it: `runs/<id>/source/<hash>.py`), load_inline a `.cu` it
wrote in a build folder. Those paths are text from the solution's side, so none is opened: a name
is only matched to files this run kept, and each is read beneath its folder without following a
link (the `.cu` only as the judge's copy in `<run>/artifacts/compile/`, never from the scratch
folder, where the solution could have linked it to `/proc/self/environ`). A `.py` in a folder named `source`, or named as the
solution is, is the solution as it ran (`<run>/source/`); a file in a `lib` folder, the format's
helper of that name (`<run>/lib/`); a `.cu`, the `<stem>.cu` the compile rung copied beside the
CUBIN, whose lines are mapped back to the solution's where that source is a string of it
(difflib's matching blocks of the two files' lines). A file of Triton's own language (the
combine functions of tl.max and tl.sum: Triton's line info does not say where they were inlined)
is read from the installed package. Any other file (a CUDA header) keeps its name and line, with
no text.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rung.common.copies import run_of
from rung.common.safe_files import Refused, read_beneath

SECTION = re.compile(r"^//-+ \.text\.(\S+)")
INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+([^;]*;)")
LOCATION = re.compile(r'"([^"]*)", line (\d+)')
TOP_LINES = 5  # lines listed (and marked hottest) at the head of each kernel
MAX_SOURCE_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Where:
    """A source line as shown: `label` (`file:line`) and its text, '' where it was not kept."""

    label: str
    text: str = ""


@dataclass
class Kernel:
    name: str
    instructions: list[tuple[int, str, Where]] = field(default_factory=list)  # address, SASS, line


class Sources:
    """The files a run kept that line info may name, each read once."""

    def __init__(self, run_dir: Path, cu: Path | None) -> None:
        self.run_dir = run_dir
        self._lines: dict[Path, list[str]] = {}
        self._cu_to_solution: dict[int, int] | None = None
        self.solution = next(iter(sorted((run_dir / "source").glob("*"))), None)
        self.lib = {p.name: p for p in (run_dir / "lib").glob("*") if p.is_file()}
        spec = importlib.util.find_spec("triton")  # where it is installed, without importing it
        places = list(spec.submodule_search_locations or []) if spec else []
        self.triton = Path(places[0]).resolve() if places else None
        copied = cu is not None and run_of(cu) == run_dir  # the judge's copy, never a scratch file
        self.cu = cu if copied and cu is not None and self._read(cu) else None

    def where(self, locations: list[tuple[str, int]]) -> Where:
        """The outermost location (inlined code belongs to its caller's line) of the solution's
        own files, else the innermost as named."""
        for path, line in reversed(locations):
            found = self._resolve(PurePosixPath(path), line)
            if found is not None:
                return found
        path, line = locations[0]
        return self._triton(PurePosixPath(path), line) or Where(f"{PurePosixPath(path).name}:{line}")

    def _resolve(self, path: PurePosixPath, line: int) -> Where | None:
        solution = self.solution
        named = path.name == solution.name or path.parent.name == "source" if solution else False
        if solution is not None and path.suffix == ".py" and named:
            return self._line(solution, line)
        if path.parent.name == "lib" and path.name in self.lib:
            return self._line(self.lib[path.name], line)
        if path.suffix == ".cu" and self.cu is not None:
            mapped = self._from_cu().get(line)
            if mapped is not None and solution is not None:
                return self._line(solution, mapped)
            return self._line(self.cu, line)
        return None

    def _triton(self, path: PurePosixPath, line: int) -> Where | None:
        """A line of Triton's own language files (tl.max's combine, tl.sum's), read from the
        installed package: Triton's line info has no `inlined at`, so a reduction's instructions
        name these lines rather than the solution's call."""
        parts = path.parts
        if self.triton is None or "triton" not in parts:
            return None
        inside = parts[len(parts) - 1 - parts[::-1].index("triton") + 1 :]
        found = self.triton.joinpath(*inside).resolve() if inside else None
        if found is None or not found.is_relative_to(self.triton) or not found.is_file():
            return None
        where = self._line(found, line)
        return Where(f"triton/{'/'.join(inside[:-1])}/{where.label}", where.text)

    def _line(self, path: Path, line: int) -> Where:
        lines = self._read(path)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        return Where(f"{path.name}:{line}", text)

    def _read(self, path: Path) -> list[str]:
        """The lines of a file of the run's (or of Triton's package), no link followed below that
        folder, at most MAX_SOURCE_BYTES; none where it cannot be read so."""
        if path not in self._lines:
            root = (
                self.triton if self.triton is not None and path.is_relative_to(self.triton) else self.run_dir
            )
            try:
                self._lines[path] = (
                    read_beneath(root, path, MAX_SOURCE_BYTES).decode(errors="replace").splitlines()
                )
            except (Refused, OSError):
                self._lines[path] = []
        return self._lines[path]

    def _from_cu(self) -> dict[int, int]:
        """Line of the kept .cu -> line of the solution it came from (1-based), where it did."""
        if self._cu_to_solution is None:
            self._cu_to_solution = {}
            if self.cu is not None and self.solution is not None:
                cu = [ln.strip() for ln in self._read(self.cu)]
                py = [ln.strip() for ln in self._read(self.solution)]
                matcher = difflib.SequenceMatcher(None, cu, py, autojunk=False)
                for a, b, size in matcher.get_matching_blocks():
                    for k in range(size):
                        if cu[a + k]:  # a blank line matches anywhere
                            self._cu_to_solution[a + k + 1] = b + k + 1
        return self._cu_to_solution


def parse(lined: str, sources: Sources) -> list[Kernel]:
    """The kernels of nvdisasm's `-gi` output, each instruction with the source line it is from."""
    kernels: list[Kernel] = []
    where = Where("(no line info)")
    for line in lined.splitlines():
        section = SECTION.match(line)
        if section:
            kernels.append(Kernel(section.group(1)))
            where = Where("(no line info)")
            continue
        if "//## File" in line:
            found = [(p, int(n)) for p, n in LOCATION.findall(line)]
            if found:
                where = sources.where(found)
            continue
        op = INSTRUCTION.match(line)
        if op and kernels:
            kernels[-1].instructions.append((int(op.group(1), 16), " ".join(op.group(2).split()), where))
    return [k for k in kernels if k.instructions]


def top_lines(kernel: Kernel) -> list[tuple[Where, int]]:
    """The source lines that became the most instructions, most first."""
    return Counter(w for _, _, w in kernel.instructions).most_common(TOP_LINES)


def hottest(kernel: Kernel, samples: dict[int, float]) -> dict[Where, float]:
    """The TOP_LINES source lines with the largest share of `samples` (Nsight Compute's source
    counters, e.g. warp-state samples, by SASS address), each with its share."""
    per_line: dict[Where, float] = {}
    for address, _, where in kernel.instructions:
        per_line[where] = per_line.get(where, 0.0) + samples.get(address, 0.0)
    total = sum(per_line.values())
    ranked = sorted(per_line.items(), key=lambda item: -item[1])[:TOP_LINES]
    return {w: n / total for w, n in ranked if n} if total else {}


def render(kernel: Kernel, samples: dict[int, float] | None = None) -> str:
    """The text of `<kernel>.sass_src.txt`: a head of the busiest (and, with samples, hottest)
    lines, then every instruction under the source line it came from, hot lines marked `>>`."""
    hot = hottest(kernel, samples) if samples else {}
    lines = [
        f"# {kernel.name}: {len(kernel.instructions)} SASS instructions, each under the source line it came from",
        "# most instructions: " + ", ".join(f"{w.label} x{n}" for w, n in top_lines(kernel)),
        "# hottest (Nsight Compute source counters): "
        + (", ".join(f"{w.label} {share:.0%}" for w, share in hot.items()) if hot else "not profiled"),
        "",
    ]
    current: Where | None = None
    for address, op, where in kernel.instructions:
        if where != current:
            mark = f">> {hot[where]:4.0%} " if where in hot else ""
            lines.append(f"{mark}{where.label}  {where.text}".rstrip())
            current = where
        shown = f"  [{samples[address]:g}]" if samples and samples.get(address) else ""
        lines.append(f"        /*{address:04x}*/  {op}{shown}")
    return "\n".join(lines) + "\n"
