"""The judge's side of the fork server: solution processes forked from a process that imported
torch once, instead of each importing it afresh (about 1.9 s each).

One server per judge (`shared`), started with the first solution process or ahead of it
(`start_ahead`), with the solution processes' allow-listed environment and never anything of a
solution (`rung.solution.forked` says what it does and does not do). A fork is asked for over a
unix socket with the child's four descriptors (its request and result pipes, its stdout and
stderr logs) and answered with the child's pid and a pidfd of it; the environment and start
message go to the child itself, on its own pipe, never through the server.

The judge is not the child's parent, so `Forked` waits on the pidfd and asks the server for the
exit status (or reaps the child itself where the server died and the child came to the judge, its
subreaper); it kills the child by pid as it would its own. It opens the child's buffers through
/proc/<pid>/fd as before: the child is the judge's user's and dumpable (the server is not made
undumpable, which a fork would inherit), and Yama's ptrace scope governs attaching, not reading.

The answer is read when the judge first needs the child (its pid, whether it lives), so a fork
asked for while the server still imports torch does not hold the judge up. Where the server
cannot fork (it failed to start, refused, or died and was restarted MAX_RESTARTS times, or
RUNG_FORK_SERVER=0), the child starts as a fresh interpreter on the same descriptors, and
`started` says so and why: the load rung records it (`confinement.start`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
from collections import deque
from typing import Any

from rung import knobs
from rung.common.child import Fresh, Process, python_command

READY_TIMEOUT_S = 300.0  # the server imports torch, on a machine that may be loaded
ANSWER_TIMEOUT_S = 30.0  # a fork, or a status
MAX_RESTARTS = 3  # per judge; past it every solution process starts afresh
MAX_ANSWER = 4096

FORK_SERVER = "fork server"
FRESH = "fresh interpreter"


class ServerGone(Exception):
    """The server died, stopped answering, or refused: why, for the record."""


class ForkServer:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.ready = False  # its ready message arrived and said so
        self.broken = ""  # why no fork will be asked of a server again, once one could not
        self.restarts = 0
        self.last_end = ""  # how the last server ended, for the record of the next child
        self.generation = 0  # servers started: a child's status is asked of the one that forked it
        self._pending: deque[Forked] = deque()  # asked for, not yet answered, in order

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self) -> None:
        """Start a server unless one runs; do not wait for it."""
        if not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
            self.broken = "no pidfd_open or SCM_RIGHTS on this platform"
        if self.broken or (self.sock is not None and self.pid is not None):
            return
        if self.proc is not None:  # it died, or stopped answering and was let go of
            code = self.proc.poll()
            self._end()
            if self.sock is not None:
                self._gone(f"it ended with code {code}")
            if self.restarts >= MAX_RESTARTS:
                self.broken = f"it died {self.restarts + 1} times ({self.last_end})"
                return
            self.restarts += 1
        from rung.judge.start import server_environment

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                python_command("rung.solution.forked", str(theirs.fileno()), str(os.getpid())),
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=server_environment(),
                cwd="/",
            )
        except OSError as e:
            ours.close()
            self.broken = f"it could not start: {e}"
            return
        finally:
            theirs.close()
        self.sock, self.ready = ours, False
        self.generation += 1

    def spawn(self, fds: tuple[int, int, int, int], fresh: Fresh) -> tuple[Process, str]:
        """A child forked by the server on these descriptors, or, where it cannot be, a fresh
        interpreter on them; and how it was started."""
        if not knobs.get("RUNG_FORK_SERVER"):
            return fresh(*fds), f"{FRESH} (RUNG_FORK_SERVER=0)"
        self.start()
        how = FORK_SERVER + (f" (restarted: {self.last_end})" if self.restarts else "")
        if self.broken or self.sock is None:
            return fresh(*fds), f"{FRESH} (fork server: {self.broken})"
        try:
            socket.send_fds(self.sock, [json.dumps({"op": "fork"}).encode()], list(fds))
        except OSError as e:
            self._gone(f"it stopped taking requests ({e.strerror})")
            return self.spawn(fds, fresh)
        forked = Forked(self, fds, fresh, how)
        self._pending.append(forked)
        return forked, how

    def answer_for(self, forked: Forked) -> dict[str, Any]:
        """The server's answer to `forked`'s request (and to every one asked before it)."""
        while forked in self._pending:
            first = self._pending[0]
            try:
                answer, fds = self._receive()
            except ServerGone as e:
                for waiting in self._pending:
                    waiting.fail(str(e))
                self._pending.clear()
                break
            self._pending.popleft()
            first.answered(answer, fds)
        return forked.answer

    def status(self, pid: int) -> int | None:
        """The raw wait status of an ended child of the server's, where it has it."""
        while self._pending:
            self.answer_for(self._pending[-1])
        if self.sock is None:
            return None
        try:
            self.sock.send(json.dumps({"op": "wait", "pid": pid}).encode())
        except OSError:
            self._gone(self._how_it_ended())
            return None
        try:
            answer, _ = self._receive()
        except ServerGone:
            return None
        status = answer.get("status")
        return status if isinstance(status, int) and answer.get("pid") == pid else None

    def _receive(self) -> tuple[dict[str, Any], list[int]]:
        assert self.sock is not None
        while True:
            timeout = ANSWER_TIMEOUT_S if self.ready else READY_TIMEOUT_S
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                self._end()
                raise self._gone(f"it did not answer within {timeout:g} s")
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, MAX_ANSWER, 1)
            except OSError as e:
                raise self._gone(f"its socket failed ({e.strerror})") from None
            if not data:
                raise self._gone(self._how_it_ended())
            answer = json.loads(data)
            if self.ready:
                return answer, fds
            if not answer.get("ready"):
                self.broken = str(answer.get("why") or "it could not prepare")
                self._end()
                raise self._gone(self.broken)
            self.ready = True

    def _how_it_ended(self) -> str:
        """Its exit, where its socket closed (it ends within moments of that)."""
        code = None
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.proc.wait(timeout=5)
        return f"it ended with code {code}" if code is not None else "it closed its socket"

    def _gone(self, why: str) -> ServerGone:
        """Forget a server that will answer no more (the next fork starts a new one)."""
        self.last_end = why
        if self.sock is not None:
            self.sock.close()
        self.sock, self.ready = None, False
        return ServerGone(why)

    def _end(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        self._end()
        self._gone("closed")


class Forked:
    """A child the server forked (or, where it could not, a fresh one), as `subprocess.Popen` is
    to its parent: pid, poll, wait."""

    def __init__(self, server: ForkServer, fds: tuple[int, int, int, int], fresh: Fresh, how: str) -> None:
        self.server, self.fresh, self.started = server, fresh, how
        self._fds = [os.dup(fd) for fd in fds]  # for a fresh start, should the fork not come
        self.generation = server.generation
        self.answer: dict[str, Any] = {}
        self.returncode: int | None = None
        self.name = "solution process"
        self.lost = ""  # how it ended, where the judge knows better than its exit status
        self._pid = 0
        self._pidfd = -1
        self._instead: Process | None = None

    def answered(self, answer: dict[str, Any], fds: list[int]) -> None:
        pid = answer.get("pid")
        if isinstance(pid, int) and pid > 1 and len(fds) == 1:
            self.answer, self._pid, self._pidfd = answer, pid, fds[0]
            self._let_go()
            return
        for fd in fds:
            os.close(fd)
        self.server.broken = str(answer.get("error") or "it answered a fork without a pid")
        self.fail(self.server.broken)

    def fail(self, why: str) -> None:
        """No fork: the child starts afresh on the descriptors it was given."""
        self.started = f"{FRESH} (fork server: {why})"
        self.answer = {"failed": why}
        self._instead = self.fresh(*self._fds)
        self._let_go()

    def _let_go(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def _resolved(self) -> Process | None:
        if not self.answer:
            self.server.answer_for(self)
        return self._instead

    @property
    def pid(self) -> int:
        instead = self._resolved()
        return instead.pid if instead is not None else self._pid

    def poll(self) -> int | None:
        return self.wait(0) if self._ended(0) else None

    def wait(self, timeout: float | None = None) -> int:
        instead = self._resolved()
        if instead is not None:
            return instead.wait(timeout)
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired("forked solution process", timeout or 0)
        if self.returncode is None:
            same = self.server.generation == self.generation
            status = self.server.status(self._pid) if same else None
            if status is None:  # its server is gone, and the kernel killed its children with it
                self.lost = f"the fork server ended ({self.server.last_end}), and the {self.name} with it"
                with contextlib.suppress(ChildProcessError):  # it came to the judge, its subreaper
                    pid, status = os.waitpid(self._pid, os.WNOHANG)
                    status = status if pid else None
            self.returncode = -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
            os.close(self._pidfd)
            self._pidfd = -1
        return self.returncode

    def _ended(self, timeout: float | None) -> bool:
        instead = self._resolved()
        if instead is not None:
            return instead.poll() is not None or (timeout != 0 and _waited(instead, timeout))
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._pidfd], [], [], timeout)
        return bool(ready)


def _waited(proc: Process, timeout: float | None) -> bool:
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


_shared: ForkServer | None = None


def shared() -> ForkServer:
    """This judge's server (one per judge, across the checks it takes)."""
    global _shared
    if _shared is None:
        _shared = ForkServer()
    return _shared


def start_ahead() -> None:
    """Start this judge's server now, so that its import of torch overlaps the judge's own."""
    if knobs.get("RUNG_FORK_SERVER"):
        shared().start()


def kept() -> set[int]:
    """The server's pid, for the judge's sweep of orphans to leave alone."""
    pid = _shared.pid if _shared is not None else None
    return {pid} if pid is not None else set()
