"""The private channel between a process and its child (the controller and a judge, a judge and
its solution process): two pipes, JSON lines, a token.

The child inherits one pipe to read requests from and one to write results to; neither is its
stdin, stdout or stderr, so whatever a solution prints lands in the child's logs, never in the
results. Every result carries a per-child token the parent sent over the request pipe, so a
line that a solution writes to the pipe by accident cannot pass for a result. A reader may cap
the size of a message: past it, `recv` raises `MessageTooLarge` rather than holding it.
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


class MessageTooLarge(Exception):
    """A message grew past the reader's cap before it ended."""


class Channel:
    def __init__(self, read_fd: int, write_fd: int, max_bytes: int | None = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.max_bytes = max_bytes
        self._buffer = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.write_fd, view)
            view = view[n:]

    def recv(self, timeout_s: float | None = None) -> dict[str, Any]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        end = self._buffer.find(b"\n")
        while end < 0:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], wait)
            if not ready:
                raise ChannelTimeout()
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise ChannelClosed()
            found = chunk.find(b"\n")  # only the new bytes are searched: a long message costs linear time
            end = len(self._buffer) + found if found >= 0 else -1
            self._buffer += chunk
            if self.max_bytes is not None and (end if end >= 0 else len(self._buffer)) > self.max_bytes:
                self._buffer = bytearray()
                raise MessageTooLarge(f"a message of more than {self.max_bytes >> 20} MiB")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return dict(json.loads(line))

    def close(self) -> None:
        """Close both ends once; a second call does nothing (fd numbers get reused)."""
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1
