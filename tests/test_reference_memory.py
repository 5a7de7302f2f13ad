"""A reference that runs out of GPU memory: in float64 the judge compares with the reference in its
own dtype and says so; in its own dtype the rung is the judge's ERROR, never a broken problem that
ends every solution's check (KernelBench's 6 GiB tensors on an 80 GB GPU, 2026-12-06). Likewise the
problem's other code (its inputs, its own check) out of memory (2026-12-06-f, a shared GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROBLEM = """
import torch

TESTS = [{"n": 8}, {"n": 1000}]
BENCHMARKS = []


def generate_input(seed, device, n):
    if n == 1000 and {inputs}:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB")
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g).to(device),)


def reference(x):
    if x.dtype == torch.float64 or {always}:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")
    return x * 2
"""


def _check(tmp_path: Path, always: bool, inputs: bool = False) -> dict:
    problem = tmp_path / "p"
    (problem / "solutions").mkdir(parents=True)
    (problem / "problem.py").write_text(
        PROBLEM.replace("{always}", str(always)).replace("{inputs}", str(inputs))
    )
    for name, body in (("right.py", "x * 2"), ("wrong.py", "x * 3")):
        (problem / "solutions" / name).write_text(f"def custom_kernel(x):\n    return {body}\n")
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(problem), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "RUNG_TRIALS": "1", "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.stdout, done.stderr[-2000:]
    return {
        Path(s["path"]).name: {r["name"]: r for r in s["rungs"]} for s in json.loads(done.stdout)["solutions"]
    }


@pytest.mark.parametrize("always", [False, True], ids=["float64 only", "every dtype"])
def test_a_reference_out_of_memory(tmp_path, always):
    rungs = _check(tmp_path, always)
    if not always:
        assert rungs["right.py"]["correct"]["status"] == "OK"
        assert any(
            "float64 run did not fit" in w for w in rungs["right.py"]["correct"]["metrics"]["warnings"]
        )
        assert rungs["wrong.py"]["correct"]["status"] == "FAILED"  # compared all the same
    else:
        for name in ("right.py", "wrong.py"):  # both checks ran to their verdicts
            failed = next(r for r in rungs[name].values() if r["status"] == "ERROR")
            assert failed["message"].startswith("rung's judge ran out of GPU memory: CUDA out of memory.")


def test_inputs_out_of_memory_are_the_judges_error_not_a_broken_problem(tmp_path):
    rungs = _check(tmp_path, always=False, inputs=True)
    correct = rungs["right.py"]["correct"]  # the first rung to draw the case of n=1000
    assert correct["status"] == "ERROR"
    assert correct["message"].startswith("rung's judge ran out of GPU memory: CUDA out of memory.")
    assert rungs["wrong.py"]["correct"]["status"] == "FAILED"  # the next check ran to its verdict
