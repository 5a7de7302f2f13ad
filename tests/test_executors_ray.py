"""The Ray executor on a local Ray instance (2 CPUs): the same verdicts as local workers, and a
Ray worker killed mid-batch costing a recorded ERROR and a retry, never a candidate. Skipped,
saying so, where Ray is not installed (pip install 'rung[ray]')."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rung.executors import check_batch
from rung.executors.local import LocalExecutor
from rung.executors.ray_cluster import RayExecutor
from rung.spec import Run, Status
from rung.store import Store
from tests.test_executors import BATCH, SOL, TINY, processes_running, slow_solution, summary

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'rung[ray]'")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def climb(workspace: Path, executor: Any, solutions: list[Path], **hooks: Any) -> list[Run]:
    store = Store(workspace)
    try:
        return check_batch(store, executor, TINY, solutions, **hooks)
    finally:
        store.close()


def test_ray_gives_the_verdicts_of_local_workers(tmp_path, local_ray):
    local = climb(tmp_path / "local", LocalExecutor(2), BATCH)
    remote = climb(tmp_path / "ray", RayExecutor(), BATCH)
    assert [summary(r) for r in remote] == [summary(r) for r in local]
    assert [r.solution.sha256 for r in remote] == [r.solution.sha256 for r in local]
    for run in remote:
        assert run.environment["executor"].startswith("ray task slot ")
        assert run.environment["host"] == socket.gethostname() and run.device.kind == "cpu"


def test_a_ray_worker_killed_mid_batch_is_recorded_and_its_candidate_retried(tmp_path, local_ray):
    slow = slow_solution(tmp_path)
    killed: list[int] = []

    def kill_the_ray_workers(run: Run, result: Any) -> None:
        if run.solution.path == str(slow) and not killed:
            # Ray titles a process running a task ray::<function>: kill those now running.
            for pid in processes_running("ray::climb_in_task"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    batch = [slow, SOL / "good.py", SOL / "wrong_shape.py"]
    runs = climb(tmp_path, RayExecutor(), batch, on_rung=kill_the_ray_workers)
    assert killed
    assert [r.verdict for r in runs] == ["PASS", "PASS", "FAIL at run"]  # nothing lost, in order
    store = Store(tmp_path)
    try:
        stored = store.runs("tiny")
    finally:
        store.close()
    lost = [r for r in stored if r.rungs[-1].name == "executor"]
    assert slow.name in {Path(r.solution.path).name for r in lost}
    for run in lost:
        assert run.rungs[-1].status == Status.ERROR and "Ray: " in run.rungs[-1].message
        assert "attempt 1 of 2" in run.rungs[-1].message
    assert len(stored) == len(batch) + len(lost)
