"""The local executor: one worker per visible GPU, or N workers on the CPU (interpreter mode).

GPUs are counted without touching CUDA (the controller never does): CUDA_VISIBLE_DEVICES where it
is set, else the driver's count through NVML; none found means the CPU. Each GPU worker sees only its own GPU.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from rung.executors.stream import StreamSlot
from rung.judge import gpu_facts
from rung.judge_process import judge_environment

WORKER = [sys.executable, "-m", "rung.executors.worker", "--die-with-parent"]


def visible_gpus(environ: Mapping[str, str]) -> list[str]:
    """The GPUs a worker may be given, as CUDA_VISIBLE_DEVICES entries of `environ` (this
    process's environment; CUDA's variable, not a rung setting); [] on a CPU-only machine."""
    pinned = environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None:
        return [g.strip() for g in pinned.split(",") if g.strip() and g.strip() != "-1"]
    return [str(i) for i in range(gpu_facts.count())]


class LocalExecutor:
    remote = False  # the workers read the problem where it is

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def slots(self) -> list[StreamSlot]:
        gpus = visible_gpus(os.environ)
        if gpus:
            # One solution process per GPU at a time: --workers can only ask for fewer.
            chosen = gpus[: self.workers] if self.workers else gpus
            return [StreamSlot(f"local gpu {g}", [*WORKER, "--gpu", g], judge_environment()) for g in chosen]
        # A judge's environment (an allow-list, no keys, rung's settings) suits its worker too.
        n = self.workers or 1
        return [StreamSlot(f"local cpu {i}", WORKER, cpu_share(judge_environment(), n)) for i in range(n)]


def cpu_share(environment: dict[str, str], workers: int) -> dict[str, str]:
    """`environment` for one of `workers` CPU workers: torch's and OpenMP's thread pools sized to
    its share of the cores, since each judge and solution process would otherwise start a pool as
    large as the machine and N workers would oversubscribe it N times. A user's OMP_NUM_THREADS wins."""
    if "OMP_NUM_THREADS" in environment:
        return environment
    return {**environment, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // workers))}
