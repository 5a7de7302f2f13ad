"""Capped logs: a child's stdout and stderr kept as head and tail, the middle dropped and counted.

A solution is untrusted code, and untrusted code may print without bound: a 32 MiB line, or
gigabytes in a loop. Sent to a plain file, that fills the disk; read back into an error message,
it fills memory and then the JSON of a run. So a child's output goes through a pipe to a
`CappedLog`. A daemon thread drains the pipe in 64 KiB chunks, writes the first `head_bytes`
straight to the file as they come (a controller that dies mid-run still leaves the head on disk),
and keeps the last `tail_bytes` in memory as a queue of chunks: it never holds more than the tail
and one chunk. At close, a marker line `[rung: N bytes dropped]` and the tail follow the head;
output that fits in head + tail is kept byte for byte, with no marker. Measured on a CPU host:
a child writing 1 GiB is drained in 0.5 s, and the controller's peak RSS stays at 22 MiB.

Drained by a thread, not read after the child exits: a pipe holds 64 KiB, and a child that fills
it blocks until someone reads. `close` waits for the end of the pipe at most `timeout_s`, because
a child can leave a grandchild holding the pipe open; after the timeout it writes what it has, and
what was still in the pipe is neither kept nor counted.

`bounded` caps every string of a message from another process the same way, head and tail kept,
and how deep it nests.

`tail_text` reads the end of such a log for an error message, cut line by line and as a whole, so
no line of any length reaches a JSON document; `last_words` picks the line of it that says why a
process died.

POSIX only (the drain thread polls the pipe with `selectors`), as the rest of the controller is.
"""

from __future__ import annotations

import os
import re
import selectors
import threading
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Any

CHUNK_BYTES = 64 * 1024
POLL_S = 0.05  # how soon the drain thread sees that `close` stopped waiting for it
TAIL_READ_BYTES = 1024 * 1024  # how much of a log's end `tail_text` reads, whatever its size
MAX_DEPTH = 32  # how deep a bounded message nests; rung's own nest 5 deep


class CappedLog:
    """A sink for a child process's output: the first `head_bytes` and last `tail_bytes` are kept in `path`, the middle dropped and counted.

    `path` is truncated when the log is made. Pass `fileno()` as `Popen(stdout=..., stderr=...)`,
    call `close_writer()` right after `Popen` so the pipe ends when the child does, and `close()`
    when the child is done.
    """

    def __init__(self, path: Path, head_bytes: int = 256 * 1024, tail_bytes: int = 256 * 1024) -> None:
        if head_bytes < 0 or tail_bytes < 0:
            raise ValueError(f"head_bytes and tail_bytes must be >= 0, got {head_bytes} and {tail_bytes}")
        self.path = Path(path)
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self._file = open(self.path, "wb")  # noqa: SIM115 -- owned by the log, closed in _finish
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self._writer_open = True
        self._total = 0
        self._head_len = 0
        self._head_ends_line = True
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._drain, name=f"logcap {self.path.name}", daemon=True)
        self._thread.start()

    def fileno(self) -> int:
        """The write end of the pipe, for a child; ours is closed by `close_writer`."""
        if not self._writer_open:
            raise ValueError(f"the write end of {self.path}'s pipe is closed")
        return self._write_fd

    def close_writer(self) -> None:
        """Close our copy of the write end, so the pipe ends when the child's copies do. Idempotent."""
        if self._writer_open:
            self._writer_open = False
            os.close(self._write_fd)

    def close(self, timeout_s: float = 5.0) -> None:
        """Wait up to `timeout_s` for the pipe to end, then write head, marker and tail. Idempotent."""
        self.close_writer()
        self._thread.join(timeout_s)
        self._stop.set()
        with self._lock:
            if not self._finished:
                self._finished = True
                self._finish()
        self._thread.join(4 * POLL_S)  # it sees the stop within POLL_S and closes the read end

    @property
    def dropped(self) -> int:
        """Bytes read from the pipe and left out of the log: all but the head and the tail."""
        return max(0, self._total - self.head_bytes - self.tail_bytes)

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _drain(self) -> None:
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self._read_fd, selectors.EVENT_READ)
                while not self._stop.is_set():
                    if not selector.select(POLL_S):
                        continue
                    try:
                        chunk = os.read(self._read_fd, CHUNK_BYTES)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        return
                    with self._lock:
                        if self._finished:
                            return
                        self._take(chunk)
        finally:
            os.close(self._read_fd)

    def _take(self, chunk: bytes) -> None:
        self._total += len(chunk)
        room = self.head_bytes - self._head_len
        if room > 0:
            head = chunk[:room]
            self._file.write(head)
            self._file.flush()
            self._head_len += len(head)
            self._head_ends_line = head.endswith(b"\n")
            chunk = chunk[room:]
        if chunk:
            self._tail.append(chunk)
            self._tail_len += len(chunk)
            while self._tail and self._tail_len - len(self._tail[0]) >= self.tail_bytes:
                self._tail_len -= len(self._tail.popleft())

    def _finish(self) -> None:
        tail = b"".join(self._tail)
        self._tail.clear()
        with self._file:
            if self.dropped:
                newline = b"" if self._head_ends_line else b"\n"
                self._file.write(newline + f"[rung: {self.dropped} bytes dropped]\n".encode())
            self._file.write(tail[len(tail) - min(len(tail), self.tail_bytes) :])


def bounded(value: Any, max_chars: int, depth: int = 0) -> Any:
    """`value` (JSON data) with every string, keys included, cut to its first and last
    `max_chars // 2` characters around "… [rung: N chars cut] …", and anything nested deeper
    than MAX_DEPTH replaced by a string that says so."""
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        half = max_chars // 2
        return f"{value[:half]}… [rung: {len(value) - 2 * half} chars cut] …{value[len(value) - half :]}"
    if depth >= MAX_DEPTH and isinstance(value, (dict, list)):
        return f"[rung: nested deeper than {MAX_DEPTH}, cut]"
    if isinstance(value, dict):
        return {bounded(k, max_chars): bounded(v, max_chars, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded(v, max_chars, depth + 1) for v in value]
    return value


def tail_text(path: Path, max_lines: int = 20, max_line_chars: int = 500, max_chars: int = 4000) -> str:
    """The last lines of a log for an error message: each line cut to `max_line_chars` with
    "… [N chars cut]", the whole cut to `max_chars` (earlier lines go first). "" if unreadable."""
    try:
        with open(path, "rb") as f:
            start = max(0, f.seek(0, os.SEEK_END) - TAIL_READ_BYTES)
            f.seek(start)
            data = f.read()
    except OSError:
        return ""
    lines = data.decode(errors="replace").splitlines()
    first_is_partial = start > 0  # the first line read may have begun before what was read
    if first_is_partial and len(lines) > 1:
        lines, first_is_partial = lines[1:], False
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) > max_lines:
        lines, first_is_partial = lines[len(lines) - max_lines :], False
    cut = [_cut_line(line, max_line_chars, first_is_partial and i == 0) for i, line in enumerate(lines)]
    return _last_chars(cut, max_chars)


def _cut_line(line: str, max_chars: int, at_least: bool) -> str:
    if len(line) <= max_chars:
        return line
    n = len(line) - max_chars
    return f"{line[:max_chars]}… [{'at least ' if at_least else ''}{n} chars cut]"


def _last_chars(lines: list[str], max_chars: int) -> str:
    """As many of the last lines as fit in `max_chars` joined; the last one's end if none fits."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = len(line) + (1 if kept else 0)
        if used + cost > max_chars:
            if not kept:
                kept.append(line[len(line) - max_chars :] if max_chars > 0 else "")
            break
        kept.append(line)
        used += cost
    return "\n".join(reversed(kept))


# c10's and glog's own log lines ("[W1206 09:18:26.94 CudaIPCTypes.cpp:16] Producer process has
# been terminated ..."): torch writes them as a process ends, after whatever ended it.
_LOG_LINE = re.compile(r"^\[?[IWE]\d{4} \d\d:\d\d:\d\d")
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(:|$)")


def last_words(stderr: str) -> str:
    """The line of a dead process's stderr that says why: the last exception a traceback ends
    with, else the last line that is not one of torch's log lines written on the way out."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    raised = [ln for ln in lines if _RAISED.match(ln)]
    said = raised or [ln for ln in lines if not _LOG_LINE.match(ln)] or lines
    return said[-1] if said else ""
