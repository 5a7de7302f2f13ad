"""Judges started ahead of the climbs that will adopt them, one per problem.

A judge's start (importing torch, then loading the problem) is paid before its first rung. A
loop that climbs one version after another of a problem starts the next climb's judge while it
waits for the agent's next proposal, so that climb adopts a judge that is ready
(`runner.climb(judge=...)`); an executor worker holds the judge that described a problem to it.
A judge reads rung's settings from the environment it started in: one started under other
settings than the climb's is ended, not adopted. Each climb still gets a judge holding no other
solution, and a fresh solution process.
"""

from __future__ import annotations

import threading
from pathlib import Path

from rung import runner
from rung.judge_process import Judge, judge_environment


class SpareJudges:
    """The judges held, one per problem; safe to use from several threads (the MCP server's)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._held: dict[str, tuple[Judge, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def keep(self, problem_dir: Path, judge: Judge) -> None:
        """Hold `judge`, running for `problem_dir` (`runner.describe_keeping`'s), for its next climb."""
        with self._lock:
            old = self._held.pop(_key(problem_dir), None)
            self._held[_key(problem_dir)] = judge, judge_environment()
        if old is not None:
            old[0].discard()

    def ready(self, problem_dir: Path) -> None:
        """Start a judge for `problem_dir` now, unless one is held: it starts up while the caller waits."""
        with self._lock:
            if _key(problem_dir) in self._held:
                return
            judge = runner.unattached_judge(problem_dir, self.scratch)
            judge.start()
            self._held[_key(problem_dir)] = judge, judge_environment()

    def take(self, problem_dir: Path) -> Judge | None:
        """The judge held for `problem_dir`, for `runner.climb` to adopt (and close); None where
        none is held or the settings changed since it started (that one is ended)."""
        with self._lock:
            judge, env = self._held.pop(_key(problem_dir), (None, {}))
        if judge is not None and env != judge_environment():
            judge.discard()
            return None
        return judge

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for judge, _ in held:
            judge.discard()


def _key(problem_dir: Path) -> str:
    return str(Path(problem_dir).resolve())
