"""The private channel between a process and its child (the controller and a judge, a judge and
its solution process): two pipes, JSON lines, a token.

The child inherits one pipe to read requests from and one to write results to; neither is its
stdin, stdout or stderr, so whatever a solution prints lands in the child's logs, never in the
results. Every result carries a per-child token the parent sent over the request pipe, so a
line that a solution writes to the pipe by accident cannot pass for a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from typing import Any


class ChannelClosed(Exception):
    """The other end closed the pipe (the child died or its parent left)."""


class ChannelTimeout(Exception):
    """No complete message arrived in time."""


class Channel:
    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.write_fd, view)
            view = view[n:]

    def recv(self, timeout_s: float | None = None) -> dict[str, Any]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], wait)
            if not ready:
                raise ChannelTimeout()
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise ChannelClosed()
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        """Close both ends once; a second call does nothing (fd numbers get reused)."""
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1
