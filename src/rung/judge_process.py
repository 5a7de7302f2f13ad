"""The controller's handle on one judge process: spawn it, ask it, time it out, kill it.

A judge is a fresh `python -m rung.judge.main` in a session of its own, with an environment built
from an allow-list (no keys, whatever their names), its stdout and stderr through capped logs,
and requests and results on a private channel. If it crashes, hangs or exits, the controller
raises `WorkerCrashed` or `WorkerTimedOut` with the tail of its stderr and carries on; the next
call starts a new judge.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from rung import confine, knobs
from rung.common.channel import Channel, ChannelClosed, ChannelTimeout
from rung.common.logcap import CappedLog, tail_text
from rung.errors import WorkerError


class WorkerCrashed(WorkerError):
    def __init__(self, how: str, stderr_tail: str) -> None:
        super().__init__(how)
        self.how = how
        self.stderr_tail = stderr_tail


class WorkerTimedOut(WorkerError):
    def __init__(self, seconds: float, stderr_tail: str) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds
        self.stderr_tail = stderr_tail


def worker_environment() -> dict[str, str]:
    """The judge's environment: an allow-list of this one's, rung's own settings, rung importable."""
    secret = knobs.secret_names(dict(os.environ))
    settings = [n for n in os.environ if n in knobs.KNOBS and n not in secret]
    env = confine.allowed_environment(os.environ, keep=settings)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Worker:
    """A worker for one solution of one problem; respawned on demand after a crash."""

    def __init__(self, hello: dict[str, Any], log_dir: Path) -> None:
        self.hello = hello
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: Channel | None = None
        self.token = ""
        self.spawns = 0

    @property
    def stderr_path(self) -> Path:
        return self.log_dir / "judge.stderr.log"

    def _spawn(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        self._logs = [CappedLog(self.log_dir / "judge.stdout.log"), CappedLog(self.stderr_path)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rung.judge.main", str(req_r), str(res_w)],
            pass_fds=(req_r, res_w),
            stdin=subprocess.DEVNULL,
            stdout=self._logs[0].fileno(),
            stderr=self._logs[1].fileno(),
            env=worker_environment(),
            cwd=self.hello.get("cwd") or None,
            start_new_session=True,
        )
        for log in self._logs:
            log.close_writer()
        os.close(req_r)
        os.close(res_w)
        self.channel = Channel(res_r, req_w)
        self.token = secrets.token_hex(16)
        self.channel.send({**self.hello, "token": self.token})
        self.spawns += 1

    def call(self, op: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Ask the worker to do `op`; its reply, or WorkerCrashed / WorkerTimedOut."""
        if self.proc is None or self.proc.poll() is not None:
            self._spawn()
        assert self.channel is not None and self.proc is not None
        try:
            self.channel.send({"op": op, "params": params})
            reply = self.channel.recv(timeout_s)
        except ChannelTimeout:
            self.kill()
            raise WorkerTimedOut(timeout_s, self.stderr_tail()) from None
        except (ChannelClosed, BrokenPipeError):
            code = self.proc.wait()
            self._forget()
            raise WorkerCrashed(_describe_exit(code), self.stderr_tail()) from None
        if reply.get("token") != self.token:
            self.kill()
            raise WorkerCrashed("a message without the worker's token arrived on the channel", "")
        return dict(reply["result"])

    def stderr_tail(self) -> str:
        return tail_text(self.stderr_path, max_lines=int(knobs.get("RUNG_KEEP_STDERR_LINES")))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._forget()

    def _forget(self) -> None:
        if self.channel is not None:
            self.channel.close()
        for log in getattr(self, "_logs", []):
            log.close(timeout_s=2)
        self.channel = None
        self.proc = None

    def close(self) -> None:
        """End the worker: politely (closing its request pipe), then by force."""
        if self.proc is not None and self.proc.poll() is None and self.channel is not None:
            self.channel.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.kill()


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"the worker was killed by {name}{hint}"
    return f"the worker exited with code {code} before answering"
