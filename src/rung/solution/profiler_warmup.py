"""CUPTI's first use in a process is slow (most of a second on an H200: library load, activity
buffers, the profiler's own start-up). A CUDA solution process pays it once, in a background thread started
with the process, so that it overlaps the compile rung instead of adding to the first benchmark
case; bench waits for it before its first CUPTI pass, so the two never overlap."""

from __future__ import annotations

import threading
import time

import torch


class ProfilerWarmup:
    def __init__(self) -> None:
        self.seconds: float | None = None
        self.error = ""
        self._thread = threading.Thread(target=self._run, name="rung-profiler-warmup", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        began = time.perf_counter()
        try:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                torch.cuda.synchronize()
        except Exception as e:  # bench's own pass reports the profiler's failure where it matters
            self.error = f"{type(e).__name__}: {e}"
        self.seconds = round(time.perf_counter() - began, 4)

    @property
    def ident(self) -> int:
        return self._thread.ident or 0

    def wait(self) -> dict[str, object]:
        """Block until the warm-up is over; what it cost (seconds, or the error)."""
        self._thread.join()
        return {"seconds": self.seconds, **({"error": self.error} if self.error else {})}
