"""A problem's solutions/wrong/expected.yml is read: a wrong version that fails at the named rung
saying the named words is an expected failure (xfailed), counted apart; one that fails elsewhere,
or passes, misses it and fails the check, which says how; one that cannot run here is a skip."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from rung import expectations, progress
from rung.errors import ProblemError
from rung.spec import Device, Run, RungResult, Solution, Status
from tests.conftest import FIXTURES, SPLIT

TINY = FIXTURES / "tiny"
WANT = expectations.Expected("correct", "elements outside", ("guard",))


def _run(run_id: int, *statuses: tuple[str, Status, str]) -> Run:
    rungs = [RungResult(n, s, m) for n, s, m in statuses]
    return Run(run_id, "p", Solution(f"v{run_id}.py", "0"), Device("cpu", "cpu"), 0, rungs, finished=1.0)


CHECKED = [("run", Status.OK, ""), ("guard", Status.OK, ""), ("scale", Status.OK, "")]


@pytest.mark.parametrize(
    ("run", "says"),
    [
        (_run(1, *CHECKED[:2], ("correct", Status.FAILED, "3 elements outside atol")), ""),
        (_run(2, ("run", Status.OK, ""), ("guard", Status.FAILED, "no_alias: elements outside")), ""),
        (
            _run(3, ("run", Status.FAILED, "shape (4,), expected (5,)")),
            "expected.yml: fails at correct or guard saying 'elements outside'; it failed at run",
        ),
        (
            _run(4, *CHECKED[:2], ("correct", Status.FAILED, "the whole output is off")),
            "expected.yml: fails at correct or guard saying 'elements outside'; it failed at correct",
        ),
        (
            _run(5, *CHECKED, ("correct", Status.OK, "")),
            "expected.yml: fails at correct or guard saying 'elements outside'; it passed",
        ),
        (_run(6, ("run", Status.SKIPPED, "needs a GPU")), ""),  # not checked here: a skip
    ],
    ids=["met", "met-first", "elsewhere", "other-words", "passed", "unverified"],
)
def test_a_wrong_version_meets_its_expectation_only_where_and_how_it_says(run, says):
    assert expectations.missed(run, WANT) == says


def test_a_malformed_expected_yml_is_the_problems_fault(tmp_path):
    (tmp_path / "solutions" / "wrong").mkdir(parents=True)
    (tmp_path / expectations.FILE).write_text("a.py: {rung: run}\n")
    with pytest.raises(ProblemError, match=re.escape("a.py: expected {rung: <rung>, says: <words>")):
        expectations.read(tmp_path)


def test_a_problems_own_check_exits_zero_only_when_every_wrong_version_fails_as_expected(tmp_path):
    problem = tmp_path / "tiny"
    shutil.copytree(TINY, problem, ignore=shutil.ignore_patterns("solutions"))
    (problem / "solutions" / "correct").mkdir(parents=True)
    (problem / "solutions" / "wrong").mkdir()
    shutil.copy(TINY / "solutions" / "good.py", problem / "solutions" / "correct")
    for name in ("raises.py", "wrong_dtype.py"):
        shutil.copy(TINY / "solutions" / name, problem / "solutions" / "wrong")
    (problem / expectations.FILE).write_text(
        'raises.py: {rung: run, says: "exploded on purpose"}\nwrong_dtype.py: {rung: correct, says: "dtype"}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(problem), "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-2] == (
        f"  FAIL at run  {problem / 'solutions/wrong/wrong_dtype.py'}  (run 3): dtype torch.float64, expected"
        " torch.float32; expected.yml: fails at correct saying 'dtype'; it failed at run"
    )
    assert lines[-3] == "== not verified =="  # raises.py failed as it must: not listed
    assert re.fullmatch(rf"== 1 passed, 1 failed, 0 errors, 0 skipped, 1 xfailed in {SPLIT} ==", lines[-1])


def test_the_check_fails_only_for_an_unexpected_failure_or_a_miss():
    failed, xfailed = _run(1, ("run", Status.FAILED, "x")), _run(2, ("run", Status.FAILED, "y"))
    assert progress.Expectations(frozenset({1, 2})).failing([failed, xfailed]) is False
    assert progress.Expectations(frozenset({2})).failing([failed, xfailed]) is True
    assert progress.Expectations(frozenset(), {3: "it passed"}).failing([]) is True
