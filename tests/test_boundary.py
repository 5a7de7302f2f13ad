"""The process boundary is the folder boundary: the controller never imports torch, triton or
solution code; the solution side imports nothing of the judge; both import only `common` and
the data model below them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rung"
CONTROLLER = [
    "rung.cli",
    "rung.api",
    "rung.runner",
    "rung.optimize",
    "rung.mcp_server",
    "rung.store",
    "rung.render",
]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_controller_never_imports_torch_or_triton():
    code = (
        f"import sys; import {', '.join(CONTROLLER)}; "
        "bad = [m for m in ('torch', 'triton') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("folder", ["solution", "common"])
def test_the_solution_side_imports_nothing_of_the_judge(folder):
    for path in (SRC / folder).glob("*.py"):
        judged = [m for m in _imports(path) if m.startswith("rung.judge")]
        assert not judged, f"{path.name} imports {judged}"


def test_the_judge_imports_nothing_that_runs_solution_code():
    for path in (SRC / "judge").rglob("*.py"):
        solution = [m for m in _imports(path) if m.startswith("rung.solution")]
        assert not solution, f"{path.name} imports {solution}"


def test_only_the_judge_reads_nvml():
    # NVML reads (and could set) the whole card: no business of the solution process.
    readers = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(m == "pynvml" or m.startswith("pynvml.") for m in _imports(path))
    ]
    assert readers == ["judge/gpu_facts.py"]
