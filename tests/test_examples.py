"""Every shipped problem: each correct solution passes, each wrong one fails where expected.yml says.

The expectations are data beside the solutions (solutions/wrong/expected.yml): the rung each wrong
solution must fail at and words its message must contain, and (`or_first`) rungs that may fire
before it by chance, as the guard's determinism check does when a kernel reads out of bounds.

Where a solution's kernels cannot run (a CUDA C++, CuTe DSL or TileLang solution on a machine
without a GPU), the rungs that run them are SKIPPED and so is the verdict; load, compile and dump
still run. So there a correct solution must build and dump, and a wrong one must fail where
expected.yml says if that rung runs here (load, compile), and be SKIPPED otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rung import backends
from rung.ladder import LADDER
from rung.spec import Run, Status
from tests.conftest import PROBLEMS, rung_of

CORRECT = sorted(PROBLEMS.glob("*/solutions/correct/*.py"))
WRONG = sorted(PROBLEMS.glob("*/solutions/wrong/*.py"))
RUNS_ANYWHERE = {r.name for r in LADDER if not r.needs_gpu and not r.runs_kernels}


def _id(path: Path) -> str:
    return f"{path.parents[2].name}/{path.name}"


def expectation(solution: Path) -> dict[str, str]:
    table = yaml.safe_load((solution.parent / "expected.yml").read_text())
    return table[solution.name]


def kernels_run_here(run: Run, solution: Path) -> bool:
    """Whether every backend of the solution can run its kernels on the device the run had."""
    return run.device.kind == "cuda" or all(b.RUNS_ON_CPU for b in backends.detect_all(solution.read_text()))


def assert_skipped_for_want_of_a_gpu(run: Run) -> None:
    rungs = "\n".join(f"{r.name}: {r.status.value} {r.message}" for r in run.rungs)
    assert not run.ok and run.outcome.value == "unverified" and run.verdict == "SKIPPED at run", rungs
    assert rung_of(run, "run").message.startswith("needs a GPU: "), rungs


def test_there_are_six_problems_each_with_naive_tuned_torch_and_wrong():
    problems = sorted(p.name for p in PROBLEMS.iterdir() if (p / "problem.py").is_file())
    assert len(problems) >= 6, problems
    for name in problems:
        correct = {p.stem for p in (PROBLEMS / name / "solutions" / "correct").glob("*.py")}
        assert {"naive", "tuned"} <= correct, name
        assert any("torch" in c for c in correct), name
        wrong = {p.name for p in (PROBLEMS / name / "solutions" / "wrong").glob("*.py")}
        assert wrong and wrong == set(
            yaml.safe_load((PROBLEMS / name / "solutions/wrong/expected.yml").read_text())
        )


@pytest.mark.parametrize("solution", CORRECT, ids=_id)
def test_correct_solution_passes(climb, solution):
    run = climb(solution.parents[2], solution)
    built = backends.detect(solution.read_text()).compile_solution is not None
    if built:
        compiled = rung_of(run, "compile")
        assert compiled.status == Status.OK, compiled.message
        assert any(a.endswith(".sass") for a in compiled.artifacts)
        assert rung_of(run, "dump").status == Status.OK
    if not kernels_run_here(run, solution):
        assert_skipped_for_want_of_a_gpu(run)
        return
    assert run.ok, "\n".join(f"{r.name}: {r.status.value} {r.message}" for r in run.rungs)
    for name in ("load", "run", "guard", "correct"):
        assert rung_of(run, name).status == Status.OK


@pytest.mark.parametrize("solution", WRONG, ids=_id)
def test_wrong_solution_fails_for_its_named_reason(climb, solution):
    want = expectation(solution)
    run = climb(solution.parents[2], solution)
    if want["rung"] not in RUNS_ANYWHERE and not kernels_run_here(run, solution):
        assert_skipped_for_want_of_a_gpu(run)
        return
    assert not run.ok
    first_bad = next(r for r in run.rungs if r.status.bad)
    allowed = [want["rung"], *want.get("or_first", [])]  # rungs that may, by chance, fire before it
    assert first_bad.name in allowed, f"{first_bad.name}: {first_bad.message}"
    assert first_bad.status == Status.FAILED
    if first_bad.name == want["rung"]:
        assert want["says"] in first_bad.message, first_bad.message
