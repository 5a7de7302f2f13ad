"""A child process that answers on a private channel: the controller's judge, the judge's
solution process.

It runs MODULE with REQUEST_FD RESULT_FD (`python_command`: an isolated interpreter) in a
session of its own, with the environment it is given, its stdout and stderr through capped logs,
and the first message it reads carrying a per-child token that every answer must carry back.
Every answer is bounded (`logcap.bounded`): a message past MAX_MESSAGE_BYTES ends the child, and
each string in one keeps its head and tail. A child that crashes, exits or stops answering
raises `ChildCrashed` or `ChildTimedOut` with the tail of its stderr; the next launch starts a
fresh one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from rung.common.channel import Channel, ChannelClosed, ChannelTimeout, MessageTooLarge
from rung.common.logcap import CappedLog, bounded, tail_text
from rung.errors import WorkerError

MAX_MESSAGE_BYTES = 32 * 2**20  # one answer; a bench's figures are well under 1 MiB
MAX_STRING_CHARS = 64 * 1024  # each string in an answer (a 48 MiB exception message was stored whole)
RUNG_ROOT = str(Path(__file__).resolve().parents[2])  # the folder rung is imported from
# `python -m`, started in a folder a solution wrote (its scratch), puts that folder first on the
# import path: a planted package named `rung` or `torch` then runs before the process confines
# itself. So: -I (no working directory or script folder on the path, no PYTHON* variable, no user
# site-packages), rung's own folder named here, -B (no __pycache__ beside a problem's files), -u
# (unbuffered, as PYTHONUNBUFFERED no longer reaches it).
_BOOT = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def python_command(module: str, *args: str) -> list[str]:
    """The command line that runs `module` as `python -m` would, isolated from the folder it
    starts in and from the environment's PYTHON* variables, with rung importable from its own
    installation (editable or not)."""
    return [sys.executable, "-I", "-B", "-u", "-c", _BOOT, RUNG_ROOT, module, *args]


class ChildCrashed(WorkerError):
    def __init__(self, how: str, stderr_tail: str) -> None:
        super().__init__(how)
        self.how, self.stderr_tail = how, stderr_tail


class ChildTimedOut(WorkerError):
    def __init__(self, seconds: float, stderr_tail: str) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds, self.stderr_tail = seconds, stderr_tail


class Process(Protocol):
    """What a child is to its parent: `subprocess.Popen`, or a process the fork server forked."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


# Starts the child afresh on four descriptors (request pipe, result pipe, stdout, stderr).
Fresh = Callable[[int, int, int, int], Process]


class Spawner(Protocol):
    """Starts a child some other way than `Fresh` (the judge's fork server); returns the process
    and how it was started, for the run's record."""

    def spawn(self, fds: tuple[int, int, int, int], fresh: Fresh) -> tuple[Process, str]: ...


class Child:
    def __init__(
        self, module: str, name: str, log_dir: Path, log_stem: str, spawner: Spawner | None = None
    ) -> None:
        self.module, self.name = module, name
        self.log_dir, self.log_stem = log_dir, log_stem
        # With a spawner, the environment is also sent as the first message (the module must read
        # it: `rung.solution.main.serve`), as a forked child inherits the server's.
        self.spawner = spawner
        self.proc: Process | None = None
        self.channel: Channel | None = None
        self.token = ""
        self._logs: list[CappedLog] = []
        self._started = ""

    @property
    def stderr_path(self) -> Path:
        return self.log_dir / f"{self.log_stem}.stderr.log"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def started(self) -> str:
        """How the child was started: "fresh interpreter" or "fork server" (with why, where the
        spawner could not fork it)."""
        return str(getattr(self.proc, "started", "") or self._started)

    def launch(self, first: dict[str, Any], env: dict[str, str], cwd: str | None) -> None:
        """Start the child and send it `first` (with its token); do not wait for it."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        self._logs = [CappedLog(self.log_dir / f"{self.log_stem}.stdout.log"), CappedLog(self.stderr_path)]

        def fresh(req: int, res: int, out: int, err: int) -> Process:
            return subprocess.Popen(
                python_command(self.module, str(req), str(res)),
                pass_fds=(req, res),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )

        fds = (req_r, res_w, self._logs[0].fileno(), self._logs[1].fileno())
        if self.spawner is not None:
            self.proc, self._started = self.spawner.spawn(fds, fresh)
        else:
            self.proc, self._started = fresh(*fds), "fresh interpreter"
        for log in self._logs:
            log.close_writer()
        os.close(req_r)
        os.close(res_w)
        self.channel = Channel(res_r, req_w, MAX_MESSAGE_BYTES)
        self.token = secrets.token_hex(16)
        if self.spawner is not None:
            self.send({"environment": env})
        self.send({**first, "token": self.token})

    def send(self, message: dict[str, Any]) -> None:
        assert self.channel is not None
        try:
            self.channel.send(message)
        except OSError:  # BrokenPipeError: it is gone
            raise self._crashed() from None

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next answer's result; ChildTimedOut or ChildCrashed where none comes."""
        assert self.channel is not None
        try:
            reply = self.channel.recv(timeout_s)
        except ChannelTimeout:
            self.kill()
            raise ChildTimedOut(timeout_s, self.stderr_tail()) from None
        except MessageTooLarge as e:
            self.kill()
            raise ChildCrashed(f"the {self.name} sent {e}; it was killed", self.stderr_tail()) from None
        except (ChannelClosed, ValueError, RecursionError):  # RecursionError: JSON nested too deep
            raise self._crashed() from None
        if reply.get("token") != self.token or not isinstance(reply.get("result"), dict):
            self.kill()
            raise ChildCrashed(f"an answer without the {self.name}'s token arrived on its channel", "")
        return dict(bounded(reply["result"], MAX_STRING_CHARS))

    def _crashed(self) -> ChildCrashed:
        assert self.proc is not None
        try:
            code: int | None = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        lost = str(getattr(self.proc, "lost", ""))  # a forked child that died with its server
        self.kill()
        return ChildCrashed(lost or describe_exit(code, self.name), self.stderr_tail())

    def stderr_tail(self, max_lines: int = 20) -> str:
        return tail_text(self.stderr_path, max_lines=max_lines)

    def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):  # a forked child not yet in its session
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.forget()

    def forget(self) -> None:
        """Let go of a child that is gone: its channel closed, its logs written out."""
        if self.channel is not None:
            self.channel.close()
        for log in self._logs:
            log.close(timeout_s=2)
        self.channel = None
        self.proc = None

    def close(self) -> None:
        """End the child: politely (closing its request pipe), then by force."""
        if self.alive and self.channel is not None:
            assert self.proc is not None
            self.channel.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.kill()


# A judge dies of SIGBUS where a shared buffer shrank under its mapping: the solution process's
# doing, as it makes them (the CPU's are sealed memfds, which cannot shrink; this names the
# cause should one get through).
_JUDGE_SIGBUS = " (a shared buffer of the solution process's shrank under it: the solution's doing)"


def describe_exit(code: int | None, who: str) -> str:
    if code is None:
        return f"the {who} stopped answering and was killed"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        if name == "SIGBUS" and who == "judge":
            hint = _JUDGE_SIGBUS
        return f"the {who} was killed by {name}{hint}"
    return f"the {who} exited with code {code} before answering"
