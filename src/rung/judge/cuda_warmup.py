"""The judge's own CUDA start-up, done while its solution process starts.

A judge that takes a solution waits through the `load` rung for the solution process to import
torch and the solution. Its own first CUDA work (the context, cuBLAS loaded for the reference's
first matmul) would otherwise land in the next rung: 0.6 to 1.5 s of `run` on every warm check
(docs/BENCHMARKS.md, Time to verdict), where a cold check had it paid by measuring the ceilings.
A thread pays it during that wait instead; every later rung waits for the thread first, so
nothing the judge times overlaps it. A start-up that fails says nothing here: the rung that
needs CUDA meets the same failure and reports it.
"""

from __future__ import annotations

import contextlib
import threading

import torch


def _start_up() -> None:
    with contextlib.suppress(Exception):
        a = torch.ones(8, 8, device="cuda")
        (a @ a).sum().item()


class CudaWarmup:
    """Started where the judge is on a GPU; `wait` returns once the start-up has ended."""

    def __init__(self, on: bool) -> None:
        self._thread = (
            threading.Thread(target=_start_up, name="rung-cuda-warmup", daemon=True) if on else None
        )
        if self._thread is not None:
            self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
