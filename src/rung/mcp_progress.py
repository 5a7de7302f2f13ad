"""A check's progress as `rung mcp` reports it: one notification per rung ended and per case (or
trial) a judge finished, and a heartbeat while one runs long.

A coding agent's client gives up on a request after a time (60 s is common) unless progress
arrives, and a check on a GPU takes minutes. The climb runs in a worker thread and says when a
rung ends (runner's `on_rung`); the judge appends a line to the run's `progress.jsonl` for every
case of correct, scale and bench it finishes. `follow` sends both as they come, and where
nothing has come for HEARTBEAT_S (one case can take longer than a client waits: a compile of
every case, Nsight Compute on many kernels) it sends that the rung is still running.

Progress counts rungs: `total` is the ladder's rungs times the solutions, `progress` the rungs
ended plus the current rung's share of its cases. The protocol asks that it only grow, so a
heartbeat adds a thousandth.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from rung.ladder import NAMES
from rung.spec import Run, RungResult

POLL_S = 0.5  # how often the run's progress.jsonl is read
HEARTBEAT_S = 15.0  # the longest silence while a check runs, well inside a 60 s client timeout

Send = Callable[[float, float, str], Awaitable[None]]


class CheckProgress:
    """Where a check of `solutions` solutions stands, fed by the climbing thread."""

    def __init__(self, store_root: Path, solutions: int) -> None:
        self.runs_dir = store_root / "runs"
        self.total = float(len(NAMES) * solutions)
        self._lock = threading.Lock()
        self._rungs_done = 0
        self._run: Run | None = None
        self._lines_read = 0
        self._share = 0.0
        self._news: list[str] = []
        self._sent = 0.0

    def rung_done(self, run: Run, result: RungResult) -> None:
        """runner's on_rung: a rung of `run` ended (called in the climbing thread)."""
        with self._lock:
            if self._run is None or self._run.id != run.id:
                self._run, self._lines_read = run, 0
            self._rungs_done += 1
            self._share = 0.0
            said = (result.message.splitlines() or [""])[0]
            self._news.append(
                f"run {run.id} {Path(run.solution.path).name}: {result.name} {result.status.value} {said}".rstrip()
            )

    def _cases(self) -> None:
        """New lines of the current run's progress.jsonl, as news and as the rung's share done."""
        if self._run is None:
            return
        path = self.runs_dir / str(self._run.id) / "progress.jsonl"
        try:
            lines = path.read_text().splitlines()
        except OSError:
            return
        for line in lines[self._lines_read :]:
            try:
                case = json.loads(line)
            except ValueError:
                break  # a line the judge is still writing: read it next time
            self._lines_read += 1
            self._share = min(0.99, case["done"] / max(1, case["total"]))
            self._news.append(
                f"run {self._run.id}: {case['rung']} case {case['done']} of {case['total']} {case['case']}"
            )

    def _running(self) -> str:
        """The rung being climbed now, in words."""
        if self._run is None:
            return "starting the first judge"
        done = self._rungs_done % len(NAMES)
        return f"run {self._run.id}: {NAMES[done]} still running" if done else "starting the next judge"

    def next_update(self, silent_s: float) -> tuple[float, str] | None:
        """(progress, message) to send now, or None; `silent_s` since the last one was sent."""
        with self._lock:
            self._cases()
            if self._news:
                message = "; ".join(self._news)
                self._news.clear()
            elif silent_s >= HEARTBEAT_S:
                message = self._running()
            else:
                return None
            value = max(self._rungs_done + self._share, self._sent + 0.001)
            self._sent = value
            return value, message


async def follow(progress: CheckProgress, send: Send) -> None:
    """Send `progress`'s updates until cancelled (when the check ends)."""
    last = time.monotonic()
    while True:
        await anyio.sleep(POLL_S)
        update = progress.next_update(time.monotonic() - last)
        if update is not None:
            await send(update[0], progress.total, update[1])
            last = time.monotonic()
