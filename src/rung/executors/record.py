"""The controller's side of a batch: workers' events written into the workspace store.

The one writer of the store. A run is begun when its worker begins it, each rung is stored as it
arrives, and the run's folder (logs, PTX, SASS, reports) is unpacked into the store's own run
folder when it ends. A job lost mid-climb keeps what it did and ends with an `executor` rung in
ERROR that says why; a job lost before it began is still recorded, so every candidate ends in
the store. Finished runs are handed on in the order the solutions were given.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rung.errors import ProblemError
from rung.executors.wire import Job, unpack_folder
from rung.problem_data import problem_name
from rung.spec import Device, Run, RungResult, Solution, Status
from rung.store import Store

OnRung = Callable[[Run, RungResult], None]
OnRun = Callable[[Run], None]

# The device of a run whose worker was lost before it said where it ran.
NO_DEVICE = Device(kind="none", name="no worker reached it")


class Recorder:
    def __init__(
        self,
        store: Store,
        jobs: list[Job],
        on_rung: OnRung | None = None,
        on_run: OnRun | None = None,
    ) -> None:
        self.store = store
        self.jobs = {job.id: job for job in jobs}
        self.on_rung, self.on_run = on_rung, on_run
        self.open: dict[int, tuple[Run, str]] = {}  # job -> (its run here, its folder on the worker)
        self.final: dict[int, Run] = {}
        self.reported = 0

    def handle(self, job_id: int, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "problem_error":
            raise ProblemError(str(event["message"]))
        if kind == "begin":
            there = Run.from_dict(event["run"])
            there.environment["executor"] = str(event.get("slot", ""))
            self._begin(job_id, there, event["run_dir"])
        elif kind == "rung":
            run, worker_dir = self.open[job_id]
            result = RungResult.from_dict(event["result"])
            result.artifacts = [self._here(a, worker_dir, run) for a in result.artifacts]
            self._add(run, result)
        elif kind == "done":
            run, _ = self.open.pop(job_id)
            self._unpack(event["artifacts"], run)
            if event["interrupted"]:
                self.store.interrupt(run)
            else:
                self.store.finish(run)
            self._final(job_id, run)
        elif kind == "lost":
            run = self._lost(job_id, str(event["reason"]))
            if event["final"]:
                self._final(job_id, run)

    def _begin(self, job_id: int, there: Run, worker_dir: str) -> None:
        job = self.jobs[job_id]
        # The solution is named by the bytes sent; the path is the one given here.
        solution = Solution(job.solution_path, there.solution.sha256, parent=there.solution.parent)
        run = self.store.begin(
            there.problem,
            job.problem_path,
            solution,
            there.device,
            there.seed,
            there.environment,
            source=job.source_bytes().decode(errors="replace"),
        )
        self.open[job_id] = (run, worker_dir)

    def _add(self, run: Run, result: RungResult) -> None:
        self.store.add_rung(run, result)
        if self.on_rung:
            self.on_rung(run, result)

    def _lost(self, job_id: int, reason: str) -> Run:
        """The job's run, begun here if the worker never began it, ended in ERROR with `reason`."""
        if job_id in self.open:
            run, _ = self.open.pop(job_id)
        else:
            job = self.jobs[job_id]
            solution = Solution.from_bytes(job.solution_path, job.source_bytes())
            source = job.source_bytes().decode(errors="replace")
            run = self.store.begin(
                problem_name(job.problem_path), job.problem_path, solution, NO_DEVICE, 0, {}, source
            )
        self._add(run, RungResult("executor", Status.ERROR, f"the worker was lost: {reason}"))
        self.store.finish(run)
        return run

    def interrupt_open(self) -> None:
        """Runs still climbing when the controller stops: finished as INTERRUPTED."""
        for run, _ in self.open.values():
            self.store.interrupt(run)
        self.open.clear()

    def _final(self, job_id: int, run: Run) -> None:
        self.final[job_id] = run
        while self.reported in self.final:
            if self.on_run:
                self.on_run(self.final[self.reported])
            self.reported += 1

    def _here(self, artifact: str, worker_dir: str, run: Run) -> str:
        """An artifact's path in this store's run folder, where it is unpacked when the run ends."""
        path = Path(artifact)
        if path.is_relative_to(worker_dir):
            return str(self.store.run_dir(run.id) / path.relative_to(worker_dir))
        return artifact

    def _unpack(self, packed: str, run: Run) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = unpack_folder(packed, Path(tmp))
            shutil.copytree(folder, self.store.run_dir(run.id), dirs_exist_ok=True)

    def runs(self) -> list[Run]:
        return [self.final[i] for i in sorted(self.final)]
