"""Executors: where the candidates of one check climb, many at once, with the same verdict.

`local` (one worker per visible GPU, or `workers` on the CPU), `ssh://[user@]host[:port]` (the
same worker on other machines; several comma-separated) and `ray` / `ray://address` (Ray tasks).
Every executor starts the same worker (rung.executors.worker), which climbs with the runner as
`rung check` does; this process alone writes the store (rung.executors.record).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from rung.errors import UsageError
from rung.executors.pool import Pool, Slot
from rung.executors.record import OnRun, OnRung, Recorder
from rung.executors.wire import Job, pack_folder, settings_to_send
from rung.spec import Run
from rung.store import Store

__all__ = ["Executor", "check_batch", "check_pairs", "from_spec"]


class Executor(Protocol):
    remote: bool  # whether its workers may be on another machine (the problem travels packed)

    def slots(self) -> Sequence[Slot]: ...


def from_spec(spec: str, workers: int | None = None) -> Executor:
    """The executor `spec` names: local, ssh://[user@]host[:port][,ssh://...], ray or ray://address."""
    from rung.executors.local import LocalExecutor

    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: at least 1")
    if spec in ("", "local"):
        return LocalExecutor(workers)
    if spec.startswith("ssh://"):
        from rung.executors.ssh import SshExecutor

        return SshExecutor(spec.split(","), workers)
    if spec == "ray" or spec.startswith("ray://"):
        from rung.executors.ray_cluster import RayExecutor

        return RayExecutor(None if spec == "ray" else spec, workers)
    raise UsageError(f"executor {spec!r}: local, ssh://[user@]host[:port] or ray[://address]")


def check_batch(
    store: Store,
    executor: Executor,
    problem: Path,
    solutions: Sequence[Path],
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
    parent: str | None = None,
) -> list[Run]:
    """Climb every solution of `problem` on `executor`'s slots; every run is stored as it goes
    (on_rung as each rung lands), handed to on_run and returned in the order given. `parent`:
    the version they were all made from (the optimize loop's round)."""
    return check_pairs(store, executor, [(problem, s) for s in solutions], on_rung, on_run, parent)


def check_pairs(
    store: Store,
    executor: Executor,
    pairs: Sequence[tuple[Path, Path]],
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
    parent: str | None = None,
) -> list[Run]:
    """check_batch for (problem, solution) pairs of several problems in one queue, so that no
    slot idles between one problem's batch and the next."""
    settings = settings_to_send(dict(os.environ), executor.remote)
    problems: dict[Path, tuple[str, str]] = {}  # each problem packed (where it travels) and keyed once
    jobs = []
    for i, (problem, solution) in enumerate(pairs):
        problem = problem.resolve()
        if problem not in problems:
            packed = pack_folder(problem) if executor.remote else ""
            problems[problem] = (packed, hashlib.sha256((packed or str(problem)).encode()).hexdigest()[:16])
        packed, key = problems[problem]
        jobs.append(Job.of(i, solution, problem, key, problem_tar=packed, settings=settings, parent=parent))
    recorder = Recorder(store, jobs, on_rung, on_run)
    try:
        Pool(list(executor.slots()), jobs).run(recorder.handle)
    finally:
        recorder.interrupt_open()
    return recorder.runs()
