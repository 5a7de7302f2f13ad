"""A slot whose worker is a process speaking the wire on its stdin and stdout: the local worker,
and the same worker over the system's ssh.

The worker's stderr (and ssh's own) goes to a temporary file whose tail explains a worker that
would not start or went away.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from rung.executors.pool import FINAL_EVENTS, SlotDown, SlotLost
from rung.executors.wire import Job

STDERR_TAIL_LINES = 5


class StreamSlot:
    def __init__(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        self.name, self.command, self.env = name, command, env
        self.proc: subprocess.Popen[str] | None = None
        self.stderr: IO[str] | None = None
        self.hello: dict[str, Any] = {}

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.close()
        self.stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the worker; close() ends it)
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=self.env,
                text=True,
                bufsize=1,
            )
        except OSError as e:
            raise SlotDown(f"cannot start {self.command[0]}: {e}") from None
        hello = self._read()
        if hello is None or hello.get("event") != "hello":
            raise SlotDown(f"the worker did not start ({self._why()})")
        self.hello = hello

    def run(self, job: Job) -> Iterator[dict[str, Any]]:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(job.to_json() + "\n")
            self.proc.stdin.flush()
        except OSError:
            raise SlotLost(f"the worker went away before the job was sent ({self._why()})") from None
        while (event := self._read()) is not None:
            yield event
            if event.get("event") in FINAL_EVENTS:
                return
        raise SlotLost(f"the worker went away mid-climb ({self._why()})")

    def _read(self) -> dict[str, Any] | None:
        proc = self.proc  # close() from the controller's thread may take it away meanwhile
        if proc is None or proc.stdout is None:
            return None
        line = proc.stdout.readline()
        if not line:
            return None
        try:
            return dict(json.loads(line))
        except ValueError:
            raise SlotLost(f"the worker wrote a line that is not an event: {line[:200]!r}") from None

    def _why(self) -> str:
        """How the worker ended, with the last lines of its stderr."""
        proc, stderr = self.proc, self.stderr
        if proc is None or stderr is None:
            return "stopped by the controller"
        try:
            how = f"exit status {proc.wait(timeout=5)}"
        except subprocess.TimeoutExpired:
            how = "its output closed"
        stderr.seek(0)
        lines = [ln.strip() for ln in stderr.read().splitlines() if ln.strip()]
        return how + (": " + " | ".join(lines[-STDERR_TAIL_LINES:]) if lines else "")

    def close(self) -> None:
        """Close the worker's input (it ends after the job in hand), then stop it if it lingers."""
        if self.proc is not None:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None
