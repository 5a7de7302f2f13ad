"""Planted solutions that attack the checker, each failing for its own named reason, and odd but
honest ones that pass. They run in the confined solution process, as any solution does."""

from __future__ import annotations

import json
import os
import signal

import pytest

from rung.common import confine
from rung.errors import ProblemError
from rung.spec import Status
from tests.conftest import FIXTURES, rung_of

TINY = FIXTURES / "tiny"
HOSTILE = FIXTURES / "hostile"
KERNELBENCH = FIXTURES / "kernelbench"
landlock = pytest.mark.skipif(confine.landlock_abi() < 6, reason="needs Landlock ABI 6 (kernel 6.12)")


def _bad(run) -> list[tuple[str, str]]:
    return [(r.name, r.message) for r in run.rungs if r.status.bad]


@pytest.mark.parametrize(
    ("solution", "rung", "status", "says"),
    [
        ("stack_walk.py", "correct", Status.FAILED, "elements outside"),
        ("imports_reference.py", "load", Status.FAILED, "uses the problem's reference"),
        ("patches_builtins.py", "correct", Status.FAILED, "elements outside"),
        (
            "patches_builtins.py",
            "guard",
            Status.FAILED,
            "functions_intact: replaced: torch.allclose, torch.equal",
        ),
        ("forges_channel.py", "run", Status.ERROR, "an answer without the solution process's token"),
        ("raw_thread.py", "guard", Status.FAILED, "thread(s) left running that were not there before"),
        ("reused_buffer.py", "guard", Status.FAILED, "output shares memory with an earlier call's output"),
    ],
)
def test_an_attack_fails_for_its_reason(climb, solution, rung, status, says):
    run = climb(TINY, HOSTILE / solution)
    r = rung_of(run, rung)
    assert r.status == status, _bad(run)
    assert says in r.message
    assert not run.ok


@landlock
@pytest.mark.parametrize(
    "solution", ["store_vandal.py", "signals_up.py", "reads_environ.py", "plants_timings.py"]
)
def test_the_store_the_controller_and_its_secrets_are_out_of_reach(climb, monkeypatch, solution):
    """Each of these raises if its attack worked; passing shows that none did."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    run = climb(TINY, HOSTILE / solution)
    assert run.ok, _bad(run)
    assert rung_of(run, "load").metrics["confinement"]["filesystem"] == "landlock"
    assert climb.store.run(run.id).ok  # the store still reads, with this run in it


def test_a_daemon_left_behind_is_killed_with_its_candidate(climb):
    run = climb(TINY, HOSTILE / "daemon.py")
    assert run.ok, _bad(run)
    pid = int((climb.store.run_dir(run.id) / "solution" / "daemon.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("solution", ["harmless.py", "shouts.py"])
def test_odd_but_honest_solutions_pass(climb, solution):
    run = climb(TINY, HOSTILE / solution)
    assert run.ok, _bad(run)


def test_output_is_capped_head_and_tail(climb):
    run = climb(TINY, HOSTILE / "shouts.py")
    logs = climb.store.run_dir(run.id) / "logs"
    for name in ("solution.stdout.log", "solution.stderr.log"):
        text = (logs / name).read_text()
        assert len(text) < 600_000 and "bytes dropped]" in text
    assert len(json.dumps(run.to_dict(), default=str)) < 200_000


@pytest.mark.parametrize("solution", ["relu_subclasses_model.py", "relu_imports_model.py"])
def test_a_kernelbench_solution_built_on_the_reference_fails(climb, solution):
    run = climb(KERNELBENCH / "relu.py", KERNELBENCH / "solutions" / solution)
    load = rung_of(run, "load")
    assert load.status == Status.FAILED
    assert "uses the problem's reference" in load.message


def test_an_exception_in_the_problem_is_the_problems_fault(climb):
    bad = FIXTURES / "bad_problems" / "reference_raises"
    with pytest.raises(ProblemError, match=r"reference_raises.*ValueError: this reference cannot handle"):
        climb(bad, TINY / "solutions" / "good.py")


def test_sigterm_records_the_run_as_interrupted(tmp_path):
    import subprocess
    import sys
    import time

    from rung.store import Store

    env = {**os.environ, "RUNG_WORKSPACE": str(tmp_path), "RUNG_TIMEOUT_S": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rung", "check", str(TINY), str(TINY / "solutions" / "hang.py")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        time.sleep(0.5)
        runs = Store(tmp_path).runs() if (tmp_path / ".rung" / "rung.db").exists() else []
        if runs and any(r.name == "load" for r in runs[0].rungs):
            break
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode != 0, out
    (run,) = Store(tmp_path).runs()
    assert run.verdict.startswith("INTERRUPTED"), run.verdict
    assert run.rungs[-1].status == Status.INTERRUPTED
