"""The executor worker: `python -m rung.executors.worker [--gpu N]`, started by every executor.

It reads jobs (one JSON line each) on stdin and climbs each solution's ladder with the runner,
exactly as `rung check` does on one machine, into a store of its own in a temporary folder; every
run, rung and end goes back as a JSON event line on stdout, the run's folder (logs, PTX, SASS,
reports) packed into the end event. The controller that started it writes its own store: one
writer, whatever the number of workers. The worker is controller-side code: it never imports a
solution (the runner's judges do, confined) and holds no key.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import IO

from rung import knobs, runner
from rung.common import confine
from rung.errors import ProblemError
from rung.executors.wire import Job, pack_folder, unpack_folder, write_event
from rung.spare_judges import SpareJudges
from rung.spec import Device, Problem, Run, RungResult, Solution
from rung.store import Store


class StreamingStore(Store):
    """The worker's own store, which also sends every write to the controller as an event."""

    def __init__(self, root: Path, out: IO[str], job: Job, where: dict[str, str]) -> None:
        super().__init__(root)
        self.out, self.job, self.where = out, job, where

    def begin(
        self,
        problem: str,
        problem_path: str,
        solution: Solution,
        device: Device,
        seed: int,
        environment: dict[str, str],
        source: str | None = None,
    ) -> Run:
        environment = {**environment, **self.where}
        run = super().begin(problem, problem_path, solution, device, seed, environment, source)
        write_event(self.out, "begin", self.job.id, run=run.to_dict(), run_dir=str(self.run_dir(run.id)))
        return run

    def add_rung(self, run: Run, result: RungResult) -> None:
        super().add_rung(run, result)
        write_event(self.out, "rung", self.job.id, result=result.to_dict())

    def finish(self, run: Run) -> None:
        super().finish(run)
        self._end(run, interrupted=False)

    def interrupt(self, run: Run) -> None:
        super().interrupt(run)
        self._end(run, interrupted=True)

    def _end(self, run: Run, interrupted: bool) -> None:
        write_event(
            self.out,
            "done",
            self.job.id,
            finished=run.finished,
            interrupted=interrupted,
            # not the solution's scratch folder (its links, its size): what left it is in artifacts/
            artifacts=pack_folder(self.run_dir(run.id), leave_out=("solution",)),
        )


class Worker:
    """One worker's state: its temporary folder, the problems it unpacked and described."""

    def __init__(self, home: Path, out: IO[str], gpu: str) -> None:
        self.home, self.out = home, out
        # gpu: the CUDA_VISIBLE_DEVICES entry this worker was given; "" where it was given none.
        self.where = {"host": socket.gethostname(), "gpu": gpu}
        self.problems: dict[str, tuple[Problem, Device]] = {}
        # The judge that described a problem, for that problem's first climb here to adopt. No
        # other is started ahead: the pool hands a worker its next job as soon as it is free,
        # and ends it with its batch, so a judge started after a climb would start no sooner
        # than the next climb's own, and be wasted where that job is another problem's.
        self.spares = SpareJudges(home / "scratch")

    def problem(self, job: Job) -> tuple[Problem, Device]:
        """The job's problem as a judge here reads it, with this machine's device (once per problem)."""
        if job.problem_key not in self.problems:
            path = Path(job.problem_path)
            if job.problem_tar:
                path = unpack_folder(job.problem_tar, self.home / "problems" / job.problem_key)
            problem, device, judge = runner.describe_keeping(path, self.home / "scratch")
            self.problems[job.problem_key] = problem, device
            self.spares.keep(Path(problem.path), judge)
        return self.problems[job.problem_key]

    def close(self) -> None:
        self.spares.close()

    def run(self, job: Job) -> None:
        with knobs.scoped(**job.settings):
            try:
                problem, device = self.problem(job)
            except ProblemError as e:
                write_event(self.out, "problem_error", job.id, message=str(e))
                return
            folder = self.home / "solutions" / str(job.id)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / job.solution_name
            path.write_bytes(job.source_bytes())
            judge = self.spares.take(Path(problem.path))
            with StreamingStore(self.home / "store", self.out, job, self.where) as store:
                runner.climb(store, problem, device, path, parent=job.parent, judge=judge)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rung.executors.worker")
    parser.add_argument("--gpu", default="", help="the GPU this worker may use (CUDA_VISIBLE_DEVICES)")
    parser.add_argument(
        "--die-with-parent", action="store_true", help="end when the process that started it ends"
    )
    args = parser.parse_args(argv)
    if args.die_with_parent:
        confine.die_with_parent()
    if args.gpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu  # before any judge starts: they inherit it
    # Events own the real stdout; anything else printed goes to stderr, off the wire.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    runner.on_sigterm()
    with tempfile.TemporaryDirectory(prefix="rung-worker-") as home:
        worker = Worker(Path(home), out, args.gpu)
        write_event(out, "hello", None, pid=os.getpid(), **worker.where)
        try:
            for line in sys.stdin:
                if line.strip():
                    worker.run(Job.from_json(line))
        finally:
            worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
