"""`rung init` and `rung new`: a workspace ready for a coding agent, and a problem to start from.

A workspace is `.rung/` (the store), `problems/`, `context/` (documentation and example code the
agent may search: a CUTLASS clone, the PTX ISA, DSL sources), an `AGENTS.md` that teaches the
loop, a `CLAUDE.md` pointing to it, and a `.mcp.json` that registers `rung mcp` (the verbs as
tools) with MCP clients that read one, by the absolute path of the rung that wrote it. A new problem is a folder that already climbs the
ladder: a reference, shapes, a cost model and a first solution, to be edited, in the kernel
language asked for: each backend's `TEMPLATE` (plain PyTorch unless another is named). Its
solutions live under `solutions/` (`solutions_of` finds them all for `rung check PROBLEM`).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from rung import backends
from rung.errors import ProblemError, UsageError
from rung.store import Store

AGENTS_MD = """\
# Writing GPU kernels here, with rung

This workspace is checked by rung, a ladder of named checks every kernel version climbs: load,
compile, run, guard, correct, scale, bench, roofline, dump, trace, profile.

## The loop

1. Pick the problem: `problems/<name>/problem.py` holds the reference, the test and benchmark
   shapes, the tolerance and the cost model. Never edit it to make a kernel pass.
2. Write a version as a new file, `problems/<name>/solutions/<your-name>/vN.py`, defining
   `custom_kernel(*inputs)` in Triton, CUDA C++ (torch's `load_inline`), CuTe DSL, TileLang or
   PyTorch: the language is read from your imports. Keep every version; write the next one from
   the last one's feedback.
3. Check it, one command:

       rung check problems/<name> problems/<name>/solutions/<your-name>/vN.py --json

   One JSON object: `solutions[0].outcome` is one of three words. "verified": every rung that
   decides correctness (run, guard, correct, scale) ran and passed, and only then is `.ok` true
   and `.verdict` "PASS". "failed": `.verdict` is "FAIL at <rung>" and `.why` says where and why.
   "unverified": nothing failed but the version was never compared with the reference here
   (`.verdict` "SKIPPED at <rung>", `.why` names the rung and the reason): it is not correct yet
   as far as anyone knows, and never the version to build on. On a machine without a GPU, CUDA
   C++, CuTe DSL and TileLang versions are built and dumped and read unverified. `.rungs` holds
   each rung's `name`, `status` (OK, FAILED, ERROR, TIMEOUT, SKIPPED), `message` (what failed and
   where: first mismatching indices with got and expected, the guard that fired, the compiler's
   lines), `metrics` and `artifacts` (TTIR, PTX, SASS, CUPTI traces under `.rung/runs/<id>/`).
4. Read before you change: `compile` gives registers, shared memory and spills; `dump` says
   whether loads are 16 bytes wide and whether the tensor cores (HGMMA) are used; `bench` gives
   the median per benchmark case with its standard error; `roofline` says how far that is from
   the hardware's limit and whether the case is memory- or compute-bound; `trace` says which
   kernel takes the time, how many launch per call and how long the GPU sits idle between them;
   `profile` (Nsight Compute) says whether each kernel is memory-, compute- or latency-bound.
5. A fast but wrong kernel is worthless: a version that is not verified is not an improvement,
   whatever it measures. Do not special-case the test shapes, cache outputs, touch the inputs,
   or call the reference: the guard rung looks for exactly that.

Through MCP the same verbs are tools, answering the same JSON: `.mcp.json` registers `rung mcp`
(check, show, history, diff, bench, dump, profile, problem_info, context_search, read_artifact).

## When to stop

Stop when `roofline` says "at roofline" for every case, when two versions in a row gain less
than their measured spread, or when the person you work for is satisfied. `rung history
problems/<name>` lists every version with its verdict; `rung show <run>` shows one in full;
`rung diff <a> <b>` compares two: sources, rungs whose status changed, times per case.

## Context

`context/` holds documentation and example code for the kernel languages (put a CUTLASS clone,
the PTX ISA, or notes there). Search it before guessing an API: `rung context add --builtin
context` indexes it with what this machine has of each kernel language (Triton's, CuTe DSL's and
TileLang's sources, the CUDA toolkit's PTX instruction and runtime headers), then `rung context
search QUERY` (`--json`) gives the best snippets with file and line.
"""

CLAUDE_MD = "Read AGENTS.md: it says how kernels are written and checked in this workspace.\n"


def rung_command() -> list[str]:
    """The absolute command that started this rung, so an agent's MCP client starts the same rung
    (its virtual environment's), not whichever `rung` comes first on the client's PATH: the
    console script, or this Python with `-m rung`."""
    started = Path(sys.argv[0])
    if started.name == "rung" and started.is_file():
        return [str(started.resolve())]
    if started.name == "__main__.py" and started.parent.name == "rung":
        return [str(Path(sys.executable).absolute()), "-m", "rung"]
    found = shutil.which("rung")
    return [str(Path(found).resolve())] if found else [str(Path(sys.executable).absolute()), "-m", "rung"]


def mcp_json() -> str:
    """`.mcp.json`: `rung mcp` on this workspace, started by the absolute command of this rung."""
    command, *args = rung_command()
    server = {"command": command, "args": [*args, "mcp", "-w", "."]}
    return json.dumps({"mcpServers": {"rung": server}}, indent=2) + "\n"


CONTEXT_README = """\
Documentation and example code an agent may read while writing kernels: a clone of NVIDIA's
CUTLASS (CuTe layouts, copy and MMA atoms, example kernels), the PTX ISA, DSL sources.
"""

PROBLEM_TEMPLATE = '''\
"""{title}: out = x * scale + shift, for an fp32 vector. Replace with your operation.

Say here what the operation is, what bounds it (memory or compute), and its bytes and FLOPs.
"""

import torch

TESTS = [{{"n": 1}}, {{"n": 1000}}, {{"n": 4097}}]
BENCHMARKS = [{{"n": 2**20}}, {{"n": 2**26}}]


def generate_input(seed: int, device: str, n: int) -> tuple[torch.Tensor, float, float]:
    g = torch.Generator(device="cuda" if device.startswith("cuda") else "cpu").manual_seed(seed)
    return torch.randn(n, generator=g, device=device), 1.5, -0.25


def reference(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    return x * scale + shift


def cost(n: int) -> dict[str, int]:
    return {{"flops": 2 * n, "bytes": 8 * n}}
'''

EXPECTED_YML = "# wrong/<file>.py: {rung: <the rung it must fail at>, says: <words of its message>}\n{}\n"


def init_workspace(folder: Path) -> list[Path]:
    """Create what is missing of a workspace in `folder`; the paths written (existing files are kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    Store(folder).close()
    written = [folder / ".rung"]
    for path, text in (
        (folder / "AGENTS.md", AGENTS_MD),
        (folder / "CLAUDE.md", CLAUDE_MD),
        (folder / ".mcp.json", mcp_json()),
        (folder / "context" / "README.md", CONTEXT_README),
    ):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    (folder / "problems").mkdir(exist_ok=True)
    return written


def solutions_of(problem: Path) -> list[Path]:
    """Every solution under the problem folder's `solutions/`, at any depth (correct/, wrong/, an
    agent's own folder), in path order; a UsageError where there is none."""
    if not problem.exists():
        raise ProblemError(f"{problem}: no such folder or file")
    if not problem.is_dir():  # a KernelBench file: its folder's solutions/ may be any file's
        raise UsageError(f"{problem} is a problem file: name the solutions to check")
    folder = problem / "solutions"
    found = sorted(
        p for p in folder.rglob("*.py") if "__pycache__" not in p.parts and not p.name.startswith("_")
    )
    if not found:
        raise UsageError(f"no solution named, and no .py file under {folder}: name the solutions to check")
    return found


def first_solution(backend: str) -> str:
    """The first solution of the scaffold problem in `backend`'s language (its `TEMPLATE`)."""
    known = {b.BACKEND.value: b for b in backends.REGISTRY}
    if backend not in known:
        raise UsageError(f"unknown backend {backend!r}: one of {', '.join(sorted(known))}")
    return known[backend].TEMPLATE


def new_problem(problems: Path, name: str, backend: str = "torch") -> tuple[Path, Path]:
    """A problem folder `problems/<name>` that climbs the ladder as it is, with a first solution in
    `backend`'s language; the folder and that solution. Refuses to overwrite."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise UsageError(f"problem name {name!r}: use lower case letters, digits and underscores")
    first = first_solution(backend)
    folder = problems / name
    if folder.exists():
        raise UsageError(f"{folder} already exists")
    (folder / "solutions" / "correct").mkdir(parents=True)
    (folder / "solutions" / "wrong").mkdir(parents=True)
    (folder / "problem.py").write_text(PROBLEM_TEMPLATE.format(title=name.replace("_", " ").capitalize()))
    solution = folder / "solutions" / "correct" / f"{backend}_first.py"
    solution.write_text(first)
    (folder / "solutions" / "wrong" / "expected.yml").write_text(EXPECTED_YML)
    return folder, solution
