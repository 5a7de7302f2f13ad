"""A tool the judge runs over a solution-side target (Nsight Compute, compute-sanitizer, proton's
target): in a session of its own, its output into a new log of the judge's (`open_new`: no link
planted there is followed), the whole session killed at the time limit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from rung.common.safe_files import open_new


def run_logged(cmd: list[str], env: dict[str, str], cwd: Path, log: Path, timeout_s: float) -> int | None:
    """The exit code of `cmd`, its stdout and stderr in `log`; None when killed at `timeout_s`.
    `cwd` must be a folder the solution cannot write."""
    with open_new(log) as sink:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
