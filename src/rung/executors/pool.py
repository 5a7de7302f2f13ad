"""Many candidates over a few slots: a job queue, one thread per slot, one retry elsewhere.

A slot is one place a candidate climbs at a time (a local worker on one GPU or CPU core, a worker
over SSH, a Ray task). Each slot's thread takes the next job it may run and forwards the worker's
events to the caller's thread, which alone writes the store. A slot whose worker is lost mid-job
(a dropped connection, a killed process) reports the job `lost` with the reason; the job goes back
to the queue once, for another slot where one is alive (else the same slot, restarted), and is
final after its second loss. A slot that cannot start is dead; when none is left, every job still
queued is lost for good, with the reasons.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from rung.executors.wire import Job

ATTEMPTS = 2  # a candidate whose worker is lost is retried once
FINAL_EVENTS = ("done", "problem_error")


class SlotDown(Exception):
    """A slot's worker could not be started (no sshd, no rung there, no Ray)."""


class SlotLost(Exception):
    """A slot's worker went away in the middle of a job."""


class Slot(Protocol):
    name: str  # where it runs, in words: "local cpu 2", "ssh://gpu1", "ray"

    def start(self) -> None:
        """Have a worker ready (start one if there is none); SlotDown if it cannot."""

    def run(self, job: Job) -> Iterator[dict[str, Any]]:
        """The worker's events for `job`, the last one final (FINAL_EVENTS); SlotLost if it goes."""
        ...

    def close(self) -> None:
        """Stop the worker, if any; a later start() starts a fresh one."""


Event = tuple[int, dict[str, Any]]


class Pool:
    def __init__(self, slots: list[Slot], jobs: list[Job]) -> None:
        self.slots = slots
        self.pending = list(jobs)
        self.tried: dict[int, list[str]] = {job.id: [] for job in jobs}
        self.live = {slot.name for slot in slots}
        self.down: list[str] = []  # why each dead slot died
        self.in_flight = 0
        self.stopping = False
        self.cond = threading.Condition()
        self.events: queue.Queue[Event] = queue.Queue()

    def run(self, on_event: Callable[[int, dict[str, Any]], None]) -> None:
        """Run every job; `on_event(job_id, event)` in this thread, until each job is final."""
        if len({slot.name for slot in self.slots}) != len(self.slots):
            raise ValueError("slot names must differ")
        threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self.slots]
        left = len(self.tried)
        try:
            for t in threads:
                t.start()
            while left:
                job_id, event = self.events.get()
                on_event(job_id, event)
                if event["event"] in FINAL_EVENTS or (event["event"] == "lost" and event["final"]):
                    left -= 1
        finally:
            with self.cond:
                self.stopping = True
                self.cond.notify_all()
            for slot in self.slots:
                slot.close()
            for t in threads:
                t.join(timeout=10)

    def _eligible(self, job: Job, slot: Slot) -> bool:
        """Not a slot that lost this job already, unless no other live slot is left to try."""
        tried = self.tried[job.id]
        return slot.name not in tried or all(s in tried for s in self.live if s != slot.name)

    def _take(self, slot: Slot) -> Job | None:
        with self.cond:
            while not self.stopping and (self.pending or self.in_flight):
                for job in self.pending:
                    if self._eligible(job, slot):
                        self.pending.remove(job)
                        self.in_flight += 1
                        return job
                self.cond.wait(0.5)
            return None

    def _serve(self, slot: Slot) -> None:
        while (job := self._take(slot)) is not None:
            try:
                slot.start()
            except SlotDown as e:
                self._slot_died(slot, job, str(e))
                return
            try:
                for event in slot.run(job):
                    self.events.put((job.id, {**event, "slot": slot.name}))
            except SlotLost as e:
                slot.close()
                self._lost(slot, job, str(e))
            else:
                with self.cond:
                    self.in_flight -= 1
                    self.cond.notify_all()

    def _lost(self, slot: Slot, job: Job, reason: str) -> None:
        with self.cond:
            self.tried[job.id].append(slot.name)
            final = len(self.tried[job.id]) >= ATTEMPTS or self.stopping
            if not final:
                self.pending.insert(0, job)
            self.in_flight -= 1
            self.cond.notify_all()
        attempt = len(self.tried[job.id])
        self.events.put((job.id, _lost(f"{slot.name}: {reason} (attempt {attempt} of {ATTEMPTS})", final)))

    def _slot_died(self, slot: Slot, job: Job, reason: str) -> None:
        """`slot` cannot start: `job` goes back (it did not run); with no slot left, all jobs end."""
        with self.cond:
            self.live.discard(slot.name)
            self.down.append(f"{slot.name}: {reason}")
            self.pending.insert(0, job)
            self.in_flight -= 1
            orphans = [] if self.live else list(self.pending)
            if orphans:
                self.pending.clear()
            self.cond.notify_all()
        for orphan in orphans:
            why = "no worker could take it: " + "; ".join(self.down)
            self.events.put((orphan.id, _lost(why, True)))


def _lost(reason: str, final: bool) -> dict[str, Any]:
    return {"event": "lost", "reason": reason, "final": final}
