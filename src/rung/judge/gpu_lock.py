"""One GPU's lock: checks sharing a GPU take turns at the work that must have it alone.

Nsight Compute profiling (two at once on one GPU: one read SKIPPED, "could not profile the
confined solution process") and the measurement of the device's ceilings (measured beside another
check, they came out a quarter of the card's and failed every later check). The lock is an
exclusive `flock` on a file per GPU (named by its UUID) in rung's cache folder, so every check of
this user on this machine, whichever workspace it runs in, waits for the one holding it; the
kernel lets it go when its holder exits, however it exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from rung import knobs
from rung.common.safe_files import safe_name
from rung.judge.rungs.outcome import Skipped

POLL_S = 0.05


class GpuBusy(Skipped):
    """The lock was not had within the time allowed: a rung waiting for it is SKIPPED saying so."""


def path(gpu: str) -> Path:
    """The lock file of the GPU named `gpu` (its UUID, or an index)."""
    return knobs.cache_dir() / "locks" / f"{safe_name(gpu)}.lock"


@contextlib.contextmanager
def held(gpu: str, timeout_s: float) -> Iterator[float]:
    """Hold GPU `gpu`'s lock for the body; yields the seconds waited for it. GpuBusy where it
    is not had within `timeout_s`."""
    where = path(gpu)
    where.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(where, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    began = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - began >= timeout_s:
                    raise GpuBusy(
                        f"another check held GPU {gpu}'s lock ({where}) for over {timeout_s:g} s"
                    ) from None
                time.sleep(POLL_S)
        yield time.monotonic() - began
    finally:
        os.close(fd)  # closing the only descriptor lets the lock go
