"""A solution that raises, exits, crashes, hangs or hoards memory costs its own rung only."""

from __future__ import annotations

import os

import pytest

from rung import knobs
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"


@pytest.mark.parametrize(
    ("solution", "status", "says"),
    [
        (
            "raises.py",
            Status.ERROR,
            "ValueError: kernel exploded on purpose (at raises.py:2 in custom_kernel)",
        ),
        ("sys_exit.py", Status.ERROR, "SystemExit: 3"),
        ("os_exit.py", Status.ERROR, "exited with code 0 before answering"),
        ("segfault.py", Status.ERROR, "killed by SIGSEGV"),
    ],
)
def test_crash_is_recorded_and_the_ladder_goes_on(climb, solution, status, says):
    run = climb(TINY, SOL / solution)
    r = rung_of(run, "run")
    assert r.status == status
    assert says in r.message
    assert rung_of(run, "load").status == Status.OK
    assert rung_of(run, "correct").status == Status.SKIPPED
    assert rung_of(run, "correct").message == f"needs run, which is {status.value}"
    assert not run.ok


def test_after_a_crash_a_fresh_worker_climbs_on(climb):
    run = climb(TINY, SOL / "crash_in_guard.py")
    guard = rung_of(run, "guard")
    assert guard.status == Status.ERROR
    assert "exited with code 7" in guard.message
    assert rung_of(run, "correct").status == Status.OK
    assert rung_of(run, "scale").status == Status.OK


def test_hang_times_out_and_is_killed(climb):
    with knobs.scoped(RUNG_TIMEOUT_S=4):
        run = climb(TINY, SOL / "hang.py")
    r = rung_of(run, "run")
    assert r.status == Status.TIMEOUT
    assert "still running after 4 s in test case {'n': 5} (seed " in r.message
    assert r.seconds < 30


def test_a_hang_past_the_first_case_names_the_case_it_hung_on(climb):
    with knobs.scoped(RUNG_TIMEOUT_S=4):
        run = climb(TINY, SOL / "hang_past_small.py")
    assert rung_of(run, "run").status == Status.OK
    correct = rung_of(run, "correct")
    assert correct.status == Status.TIMEOUT
    assert "still running after 4 s in test case {'n': 300} (seed " in correct.message


def test_unbounded_allocation_is_contained(climb):
    with knobs.scoped(RUNG_WORKER_MEMORY_MB=4096, RUNG_TIMEOUT_S=60):
        run = climb(TINY, SOL / "hog.py")
    r = rung_of(run, "run")
    assert r.status == Status.ERROR
    assert "out of memory" in r.message or "MemoryError" in r.message or "killed" in r.message


def test_secrets_never_reach_the_worker(climb, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("HF_TOKEN", "hf-must-not-leak")
    run = climb(TINY, SOL / "reads_secret.py")
    assert rung_of(run, "run").status == Status.OK, rung_of(run, "run").message
    assert "OPENAI_API_KEY" in os.environ  # only the worker's copy was cleaned


def test_the_controller_never_imports_solution_code(climb):
    import sys

    before = set(sys.modules)  # other tests in this process may have loaded problems as a judge
    climb(TINY, SOL / "good.py")
    new = set(sys.modules) - before
    assert not [n for n in new if n.startswith(("rung_solution", "rung_problem", "torch", "triton"))]


def test_the_judge_out_of_gpu_memory_is_an_error_that_says_so(monkeypatch, tmp_path):
    """Not the solution's verdict either way (the solution process may hold the memory, or the
    case may not fit beside the judge's copies): an ERROR naming the memory, never a traceback."""
    from types import SimpleNamespace

    import torch

    from rung.judge import main
    from rung.judge.rungs import JUDGE_RUNGS

    def out_of_memory(session, params):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB.\nmore")

    monkeypatch.setitem(JUDGE_RUNGS, "guard", out_of_memory)
    said = main.handle(SimpleNamespace(warnings={}, run_dir=tmp_path), "guard", {})
    assert said["status"] == "ERROR"
    assert (
        said["message"]
        == "rung's judge ran out of GPU memory: CUDA out of memory. Tried to allocate 6.00 GiB."
    )
