"""Executors: the job pool's retries (fake slots, a seam), and real local workers whose verdicts
match climbs one after another, whose runs land in the store in full, and whose lost worker costs
one recorded ERROR and a retry, never a candidate."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rung import api
from rung.errors import ProblemError, UsageError
from rung.executors import from_spec
from rung.executors.local import LocalExecutor, cpu_share
from rung.executors.pool import Pool, SlotDown, SlotLost
from rung.executors.wire import Job, pack_folder, unpack_folder
from rung.spec import Run, Status
from rung.store import Store
from tests.conftest import FIXTURES

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"
BATCH = [SOL / "good.py", SOL / "wrong_shape.py", SOL / "raises.py", SOL / "segfault.py"]


def slow_solution(folder: Path, seconds: float = 3.0) -> Path:
    """A correct solution whose load takes `seconds`: a climb long enough to break mid-way."""
    path = folder / "slow.py"
    path.write_text(f"import time\ntime.sleep({seconds})\n\n\ndef custom_kernel(x):\n    return 2 * x\n")
    return path


def summary(run: Run) -> tuple[str, list[tuple[str, str]]]:
    """What must not depend on the executor: the verdict and every rung's status."""
    return run.verdict, [(r.name, r.status.value) for r in run.rungs]


def processes_running(marker: str) -> list[int]:
    """Pids of processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and int(entry.name) != os.getpid():
                found.append(int(entry.name))
    return found


# --- the pool, with fake slots --------------------------------------------------------------


class FakeSlot:
    """A slot that finishes jobs at once, loses the ones named in `loses`, or cannot start."""

    def __init__(self, name: str, loses: set[int] = frozenset(), starts: bool = True) -> None:
        self.name, self.loses, self.starts = name, set(loses), starts
        self.ran: list[int] = []

    def start(self) -> None:
        if not self.starts:
            raise SlotDown("no route to host")

    def run(self, job: Job) -> Iterator[dict[str, Any]]:
        self.ran.append(job.id)
        yield {"event": "begin", "job": job.id}
        if job.id in self.loses:
            raise SlotLost("connection reset")
        yield {"event": "done", "job": job.id}

    def close(self) -> None:
        pass


def jobs(n: int) -> list[Job]:
    return [Job(i, f"s{i}.py", "", "p", "k") for i in range(n)]


def run_pool(slots: list[FakeSlot], n: int) -> dict[int, list[dict[str, Any]]]:
    seen: dict[int, list[dict[str, Any]]] = {i: [] for i in range(n)}
    Pool(list(slots), jobs(n)).run(lambda job, event: seen[job].append(event))
    return seen


def test_a_lost_job_is_retried_once_on_another_slot():
    a, b = FakeSlot("a", loses={0}), FakeSlot("b")
    seen = run_pool([a, b], 4)
    lost = [e for e in seen[0] if e["event"] == "lost"]
    assert (
        len(lost) == 1
        and not lost[0]["final"]
        and "a: connection reset (attempt 1 of 2)" in lost[0]["reason"]
    )
    assert seen[0][-1]["event"] == "done" and seen[0][-1]["slot"] == "b"
    assert all(seen[i][-1]["event"] == "done" for i in range(4))


def test_a_job_lost_twice_is_final_and_the_rest_go_on():
    seen = run_pool([FakeSlot("a", loses={1}), FakeSlot("b", loses={1})], 3)
    lost = [e for e in seen[1] if e["event"] == "lost"]
    assert [e["final"] for e in lost] == [False, True]
    assert "attempt 2 of 2" in lost[1]["reason"]
    assert seen[0][-1]["event"] == "done" and seen[2][-1]["event"] == "done"


def test_with_one_slot_the_retry_is_on_that_slot_restarted():
    a = FakeSlot("a", loses={0})
    seen = run_pool([a], 2)
    assert a.ran.count(0) == 2 and seen[0][-1] == {
        "event": "lost",
        "reason": seen[0][-1]["reason"],
        "final": True,
    }
    assert seen[1][-1]["event"] == "done"


def test_a_slot_that_cannot_start_leaves_its_jobs_to_the_others():
    down, up = FakeSlot("down", starts=False), FakeSlot("up")
    seen = run_pool([down, up], 3)
    assert all(seen[i][-1]["event"] == "done" and seen[i][-1]["slot"] == "up" for i in range(3))


def test_with_no_slot_able_to_start_every_job_is_lost_with_the_reasons():
    seen = run_pool([FakeSlot("x", starts=False), FakeSlot("y", starts=False)], 3)
    for i in range(3):
        (event,) = seen[i]
        assert event["event"] == "lost" and event["final"]
        assert "x: no route to host" in event["reason"] and "y: no route to host" in event["reason"]


# --- the wire -------------------------------------------------------------------------------


def test_a_job_carries_the_solution_bytes_exactly(tmp_path):
    path = tmp_path / "odd.py"
    data = b"def custom_kernel(x):\n    return 2 * x  # \xff not utf-8\n"
    path.write_bytes(data)
    job = Job.from_json(Job.of(0, path, TINY, "k").to_json())
    assert job.source_bytes() == data and job.solution_name == "odd.py"


def test_a_packed_folder_unpacks_to_the_same_files(tmp_path):
    out = unpack_folder(pack_folder(TINY), tmp_path)
    assert out.name == "tiny" and (out / "problem.py").read_bytes() == (TINY / "problem.py").read_bytes()
    assert sorted(p.name for p in (out / "solutions").glob("*.py")) == sorted(
        p.name for p in SOL.glob("*.py")
    )


def test_executor_names_are_checked():
    for bad in ("gpu", "ssh://", "ftp://host"):
        with pytest.raises(UsageError):
            from_spec(bad)
    with pytest.raises(UsageError):
        from_spec("local", workers=0)
    assert isinstance(from_spec("local", 2), LocalExecutor)


def test_cpu_workers_split_the_cores_between_their_thread_pools(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert cpu_share({}, 1)["OMP_NUM_THREADS"] == "8"
    assert cpu_share({}, 2)["OMP_NUM_THREADS"] == "4"
    assert cpu_share({}, 16)["OMP_NUM_THREADS"] == "1"  # never zero threads
    assert cpu_share({"OMP_NUM_THREADS": "3"}, 2)["OMP_NUM_THREADS"] == "3"  # the user's choice wins
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr("rung.executors.local.visible_gpus", lambda environ: [])
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    slots = LocalExecutor(2).slots()
    assert [(s.env or {})["OMP_NUM_THREADS"] for s in slots] == ["4", "4"]


# --- real local workers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory) -> list[Run]:
    """The batch climbed as `rung check` climbs today: one after another, in this process."""
    return api.check(TINY, BATCH, tmp_path_factory.mktemp("serial"))


def test_two_local_workers_give_the_verdicts_of_one_by_one(tmp_path, one_by_one):
    reported: list[Run] = []
    runs = api.check_many(TINY, BATCH, "local", 2, tmp_path, on_run=reported.append)
    assert [summary(r) for r in runs] == [summary(r) for r in one_by_one]
    assert [r.verdict for r in runs] == ["PASS", "FAIL at run", "FAIL at run", "FAIL at run"]
    assert [r.solution.path for r in reported] == [str(p) for p in BATCH]  # reported in the order given
    store = Store(tmp_path)
    try:
        stored = {r.id: r for r in store.runs("tiny")}
        for run in runs:
            again = stored[run.id]
            assert summary(again) == summary(run) and again.finished
            assert again.solution.sha256 == run.solution.sha256 == one_by_one[runs.index(run)].solution.sha256
            assert again.environment["host"] and again.environment["executor"].startswith("local cpu ")
            assert again.device.kind == "cpu"
            assert (store.run_dir(run.id) / "result.json").is_file()
            assert any((store.run_dir(run.id) / "logs").iterdir())  # the judge's logs came back
            took = again.time_to_verdict  # when each rung began on its worker came back too
            assert took.start_s is not None and took.other_s is not None and took.wall_s is not None
            assert took.start_s + took.rungs_s + took.profile_s + took.other_s == pytest.approx(
                took.wall_s, abs=2e-3
            )
        assert {r.environment["executor"] for r in runs} == {"local cpu 0", "local cpu 1"}
    finally:
        store.close()


def test_a_bad_problem_stops_the_batch_with_its_error(tmp_path):
    with pytest.raises(ProblemError, match="reference"):
        api.check_many(FIXTURES / "bad_problems" / "no_reference", [SOL / "good.py"], "local", 1, tmp_path)


def test_a_worker_killed_mid_climb_is_recorded_and_its_candidate_retried(tmp_path):
    slow = slow_solution(tmp_path)
    killed: list[int] = []

    def kill_the_worker(run: Run, result: Any) -> None:
        if run.solution.path == str(slow) and not killed:
            # One worker, climbing slow.py: its first rung is in, the next ones are to come.
            for pid in processes_running("rung.executors.worker"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    runs = api.check_many(TINY, [slow, SOL / "good.py"], "local", 1, tmp_path, on_rung=kill_the_worker)
    assert killed
    assert [r.verdict for r in runs] == ["PASS", "PASS"]
    store = Store(tmp_path)
    try:
        lost = [r for r in store.runs("tiny") if any(x.name == "executor" for x in r.rungs)]
    finally:
        store.close()
    assert len(lost) == 1 and lost[0].solution.path == str(slow)
    error = lost[0].rungs[-1]
    assert error.status == Status.ERROR and "local cpu 0: the worker went away mid-climb" in error.message
    assert "attempt 1 of 2" in error.message


def test_an_interrupt_mid_batch_stores_the_open_runs_interrupted(tmp_path):
    slow = slow_solution(tmp_path, seconds=30)

    def interrupt_at_first_rung(run: Run, result: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.check_many(TINY, [SOL / "good.py", slow], "local", 2, tmp_path, on_rung=interrupt_at_first_rung)
    store = Store(tmp_path)
    try:
        runs = store.runs("tiny")
    finally:
        store.close()
    assert runs and all(r.finished for r in runs)
    assert any(r.verdict.startswith("INTERRUPTED") for r in runs)
