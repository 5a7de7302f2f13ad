"""Every shipped problem: each correct solution passes, each wrong one fails where expected.yml says.

The expectations are data beside the solutions (solutions/wrong/expected.yml): the rung each wrong
solution must fail at and words its message must contain, and (`or_first`) rungs that may fire
before it by chance, as the guard's determinism check does when a kernel reads out of bounds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rung.spec import Status
from tests.conftest import PROBLEMS, rung_of

CORRECT = sorted(PROBLEMS.glob("*/solutions/correct/*.py"))
WRONG = sorted(PROBLEMS.glob("*/solutions/wrong/*.py"))


def _id(path: Path) -> str:
    return f"{path.parents[2].name}/{path.name}"


def expectation(solution: Path) -> dict[str, str]:
    table = yaml.safe_load((solution.parent / "expected.yml").read_text())
    return table[solution.name]


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
    assert run.ok, "\n".join(f"{r.name}: {r.status.value} {r.message}" for r in run.rungs)
    for name in ("load", "run", "guard", "correct"):
        assert rung_of(run, name).status == Status.OK
    if run.solution.backend == "triton":
        assert rung_of(run, "compile").status == Status.OK
        assert any(a.endswith(".sass") for a in rung_of(run, "compile").artifacts)


@pytest.mark.parametrize("solution", WRONG, ids=_id)
def test_wrong_solution_fails_for_its_named_reason(climb, solution):
    want = expectation(solution)
    run = climb(solution.parents[2], solution)
    assert not run.ok
    first_bad = next(r for r in run.rungs if r.status.bad)
    allowed = [want["rung"], *want.get("or_first", [])]  # rungs that may, by chance, fire before it
    assert first_bad.name in allowed, f"{first_bad.name}: {first_bad.message}"
    assert first_bad.status == Status.FAILED
    named = rung_of(run, want["rung"])
    assert named.status == Status.FAILED and want["says"] in named.message, named.message
