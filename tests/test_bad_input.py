"""Bad problems and bad solutions: one clear line each, nothing crashes the controller."""

from __future__ import annotations

import pytest

from rung import runner
from rung.errors import ProblemError
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"
BAD = FIXTURES / "bad_problems"


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("empty", "no problem.py"),
        ("import_fails", "import failed: RuntimeError: this problem is broken on purpose"),
        ("no_reference", "defines no function reference()"),
        ("no_tests", "defines no TESTS"),
        ("does_not_exist", "no such folder"),
    ],
)
def test_bad_problem_is_one_line(tmp_path, folder, says):
    with pytest.raises(ProblemError) as e:
        runner.describe(BAD / folder, tmp_path)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("solution", "rung", "status", "says"),
    [
        ("syntax_error.py", "load", Status.FAILED, "SyntaxError at syntax_error.py:1"),
        ("no_kernel.py", "load", Status.FAILED, "defines no custom_kernel"),
        (
            "import_error.py",
            "load",
            Status.ERROR,
            "ModuleNotFoundError: No module named 'no_such_module_anywhere'",
        ),
        ("wrong_shape.py", "run", Status.FAILED, "shape (4,), expected (5,)"),
        ("wrong_dtype.py", "run", Status.FAILED, "dtype torch.float64, expected torch.float32"),
        ("returns_tuple.py", "run", Status.FAILED, "returned a tuple of 2; expected a torch.float32 tensor"),
        ("returns_none.py", "run", Status.FAILED, "returned None; expected a torch.float32 tensor"),
    ],
)
def test_bad_solution_is_one_line_in_the_ladder(climb, solution, rung, status, says):
    run = climb(TINY, SOL / solution)
    r = rung_of(run, rung)
    assert r.status == status, r.message
    assert says in r.message
    assert "\n" not in r.message
    assert not run.ok


def test_after_a_failed_load_every_later_rung_says_why(climb):
    run = climb(TINY, SOL / "no_kernel.py")
    for r in run.rungs[1:]:
        assert r.status == Status.SKIPPED
        assert r.message
