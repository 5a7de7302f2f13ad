"""The fork server: a trusted process that imports torch once and forks one solution process per
request, so a solution process starts in milliseconds instead of importing torch again.

    python -m rung.solution.forked SOCKET_FD JUDGE_PID

Started by the judge (`rung.judge.fork_server`) with the solution processes' allow-listed
environment, so it holds no secret. It imports torch and rung's solution-side harness, never
CUDA (a CUDA driver initialised before a fork is unusable in the child) and never Triton
(`triton.jit` decides at decoration time whether to interpret, from TRITON_INTERPRET, which each
child sets for itself: the builder compiles, the others interpret). It never imports or runs a
solution, and reads nothing from a child: its one channel is the unix socket from the judge.

Requests on that socket (JSON, descriptors by SCM_RIGHTS):
- fork, with four descriptors (the child's request and result pipes, its stdout and stderr
  logs): the server forks; the child confines itself exactly as a freshly started solution
  process does (`rung.solution.main.serve`: the same code path), then imports the solution. The
  answer is the child's pid, with a pidfd of it opened before the child could be reaped (so the
  judge waits on that very process, never a reused pid).
- wait, with a pid: its exit status once it has ended (the judge is not its parent).

The server forks only while it is single-threaded (/proc/self/task holds one entry): torch's
import starts OpenBLAS's pool, which OpenBLAS stops in its own fork handler, so a first fork at
start (a child that exits at once) leaves the server alone in its process before any real
child. Each child forks from the same pristine server: nothing an earlier child did (its files,
memory, environment) is in the server to be inherited.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback
from typing import Any

MAX_REQUEST = 4096  # a request is a few dozen bytes
KEPT_STATUSES = 256  # exit statuses of children ended and not yet asked for


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def _single_threaded() -> str:
    """'' where this process has one thread, else why not."""
    if threading.active_count() != 1 or _tasks() != 1:
        return f"{_tasks()} threads ({threading.active_count()} of Python's) in the fork server"
    return ""


def _prepare() -> str:
    """Import what every solution process imports before the solution, then leave this process
    single-threaded; '' where it is ready to fork, else why not."""
    import torch  # the point of the server: imported once, inherited by each child

    import rung.solution.harness
    import rung.solution.requests  # noqa: F401

    if torch.cuda.is_initialized():  # asks, never starts it
        return "CUDA was initialised in the fork server: a child could not use it"
    if not hasattr(os, "pidfd_open"):
        return "no pidfd_open on this platform"
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError as e:
        return f"pidfd_open: {e.strerror}"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()  # OpenBLAS's fork handler stops its pool: the server is alone from here on
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return _single_threaded()


def _child(server: socket.socket, fds: list[int], parent: int) -> None:
    """In the forked child: become a solution process as a fresh one would, and never return
    into the server's loop."""
    code = 1
    try:
        server.close()  # the judge's channel to the server is never a child's
        os.setsid()
        _die_with(parent)
        req_r, res_w, out, err = fds
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        why = _single_threaded()
        if why:
            raise RuntimeError(f"forked with {why}")
        from rung.common.channel import Channel
        from rung.solution import main

        _fresh_state()
        sys.argv = [str(main.__file__), str(req_r), str(res_w)]  # as a fresh one's reads
        code = main.serve(Channel(req_r, res_w))
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _fresh_state() -> None:
    """What a fresh interpreter would not share with its siblings: the temporary folder Python
    computed (from TMPDIR, which `serve` sets) and numpy's global random state."""
    import tempfile

    tempfile.tempdir = None
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # from the OS's entropy, as at import


def _reap(statuses: dict[int, int]) -> None:
    """Children that ended, their statuses kept until the judge asks (at most KEPT_STATUSES)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status
        while len(statuses) > KEPT_STATUSES:
            statuses.pop(next(iter(statuses)))


def _ended(pid: int) -> int | None:
    """The wait status of a child the judge saw end (its pidfd said so), as soon as it is here."""
    for _ in range(100):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        time.sleep(0.01)
    return None


def _die_with(parent: int) -> None:
    """Killed by the kernel when `parent` ends; at once where it already has."""
    from rung.common import confine

    confine.die_with_parent()
    if os.getppid() != parent:
        os._exit(1)


def _answer(server: socket.socket, answer: dict[str, Any], fds: list[int] | None = None) -> None:
    socket.send_fds(server, [json.dumps(answer).encode()], fds or [])


def serve_forks(server: socket.socket) -> int:
    statuses: dict[int, int] = {}
    why = _prepare()
    _answer(server, {"ready": not why, "why": why})
    if why:
        return 1
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(server, MAX_REQUEST, 4)
        except ConnectionResetError:
            return 0
        if not data:
            return 0  # the judge is gone
        request = json.loads(data)
        _reap(statuses)
        if request.get("op") == "wait":
            pid = int(request["pid"])
            status = statuses.pop(pid) if pid in statuses else _ended(pid)
            _answer(server, {"pid": pid, "status": status})
            continue
        if request.get("op") != "fork" or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            _answer(server, {"error": "a fork needs op 'fork' and four descriptors"})
            continue
        why = _single_threaded()
        if why:
            for fd in fds:
                os.close(fd)
            _answer(server, {"error": why})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            statuses.clear()  # nothing of an earlier child, not even how it ended
            _child(server, fds, me)
        for fd in fds:
            os.close(fd)  # the child's alone: a log's pipe ends when the child does
        pidfd = os.pidfd_open(pid)  # not reaped before this: the pid is still that child's
        try:
            _answer(server, {"pid": pid}, [pidfd])
        finally:
            os.close(pidfd)


def main(argv: list[str]) -> int:
    """argv: the socket's descriptor, the judge's pid."""
    _die_with(int(argv[1]))
    server = socket.socket(fileno=int(argv[0]))
    return serve_forks(server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
