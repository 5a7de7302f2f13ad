"""The controller's handle on one judge process: spawn it, ask it, time it out, kill it.

A judge is a fresh `python -m rung.judge.main` in a session of its own, with an environment built
from an allow-list (no keys, whatever their names), its stdout and stderr through capped logs,
and requests and results on a private channel. If it crashes, hangs or exits, the controller
raises `ChildCrashed` or `ChildTimedOut` with the tail of its stderr and carries on; the next
call starts a new judge. A judge started with no solution, to describe a problem, can be handed
one (`adopt`) so that a climb right after does not start a second.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from rung import knobs
from rung.common import confine
from rung.common.child import Child, ChildCrashed, ChildTimedOut
from rung.common.messages import JudgeHello


def judge_environment() -> dict[str, str]:
    """The judge's environment: an allow-list of this one's, rung's own settings, rung importable."""
    secret = knobs.secret_names(dict(os.environ))
    settings = [n for n in os.environ if n in knobs.KNOBS and n not in secret]
    env = confine.allowed_environment(os.environ, keep=settings)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Judge:
    """The judge for one solution of one problem; started again on demand after a crash."""

    def __init__(self, hello: JudgeHello, log_dir: Path) -> None:
        self.hello = hello
        self.log_dir = log_dir
        self.child = Child("rung.judge.main", "judge", log_dir, "judge")

    def adopt(self, hello: JudgeHello, log_dir: Path, timeout_s: float = 60.0) -> None:
        """Hand this judge, started with no solution (to describe the problem), the solution
        `hello` names, so a climb does not pay for a second judge's start. A judge that cannot
        take it is ended: the next call starts a fresh one with `hello`, as it would have anyway."""
        self.hello, self.log_dir = hello, log_dir
        if not self.child.alive:
            return
        try:
            self.child.send({"op": "adopt", "params": {"hello": hello.to_dict()}})
            self.child.receive(timeout_s)
        except (ChildCrashed, ChildTimedOut):
            self.child.kill()

    def start(self) -> None:
        """Launch the judge if it is not running, without waiting for it to import anything."""
        if not self.child.alive:
            self.child.log_dir = self.log_dir
            self.child.launch(self.hello.to_dict(), judge_environment(), self.hello.cwd or None)

    def call(self, op: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask the judge to do `op`; its reply, or ChildCrashed / ChildTimedOut."""
        self.start()
        self.child.send({"op": op, "params": params})
        return self.child.receive(timeout_s)

    def stderr_tail(self) -> str:
        return self.child.stderr_tail(int(knobs.get("RUNG_KEEP_STDERR_LINES")))

    def discard(self) -> None:
        """End a judge that no climb adopted, with the folder it was started in (only its log).
        It holds no solution and nothing in progress: killed, not asked to finish (a spare may
        still be importing torch, and a shutdown does not wait for that)."""
        try:
            self.child.kill()
        finally:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def close(self, at_once: bool = False) -> None:
        """End the judge: asked to finish (its channel closed), or, `at_once` (an interrupted
        climb, whose record is already stored), killed without waiting for the rung in progress."""
        if at_once:
            self.child.kill()
        self.child.close()
        kept = self.log_dir / self.child.stderr_path.name
        if self.child.stderr_path != kept and self.child.stderr_path.is_file():
            # An adopted judge wrote to the folder it was started in: its log goes with the run.
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.child.stderr_path, kept)
            shutil.rmtree(self.child.stderr_path.parent, ignore_errors=True)
