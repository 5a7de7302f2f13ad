"""The GPU's clock while it works: one NVML reading taken while timed work runs.

`Reading.start()` takes its reading on a thread SAMPLE_AFTER_S later, so it falls inside the work
started next (the solution's samples, the reference's, the ceilings' matmuls), as nvidia-smi's did
when it was started in the background and sampled after its own start-up; `.result()` collects
it. One reading, not a sampler: a thread polling beside the reference, which the judge times in
this process, would compete with its launches for the interpreter. No clock is ever set: rung
measures the card as it finds it.
"""

from __future__ import annotations

import threading
import time
from functools import cache
from typing import Any

from rung.judge import gpu_facts

SAMPLE_AFTER_S = 0.05
THROTTLED_BELOW = 0.75  # of the default application clock
KEPT = ("sm_mhz", "max_sm_mhz", "default_app_sm_mhz", "clock_reasons", "power_w", "power_limit_w")


class Reading:
    """With `ours` (the processes of this check on the GPU), who else used the GPU then too."""

    def __init__(self, ours: set[int] | None = None) -> None:
        self._facts: dict[str, Any] = gpu_facts.unavailable("not read")
        self._ours = ours
        self._others: dict[str, Any] | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)

    @classmethod
    def start(cls, ours: set[int] | None = None) -> Reading:
        reading = cls(ours)
        reading._thread.start()
        return reading

    def _read(self) -> None:
        time.sleep(SAMPLE_AFTER_S)
        self._facts = gpu_facts.read(cuda_uuid())
        if self._ours is not None:
            self._others = gpu_facts.others_using(cuda_uuid(), self._ours)

    def result(self) -> dict[str, Any]:
        self._thread.join()
        out = summary(self._facts)
        if self._others is not None:
            out["others_on_gpu"] = self._others
        return out


def summary(facts: dict[str, Any]) -> dict[str, Any]:
    """The clock figures of a GPU record, and `throttled`: the SM clock below THROTTLED_BELOW of
    its default application clock (a card held down, whatever NVML names as the reason)."""
    if not facts.get("available"):
        return {"error": f"no clock reading: {facts.get('reason', 'NVML unavailable')}"}
    out = {key: facts.get(key) for key in KEPT}
    sm, default = facts.get("sm_mhz"), facts.get("default_app_sm_mhz")
    out["throttled"] = bool(sm and default and sm < THROTTLED_BELOW * default)
    return out


@cache
def cuda_uuid() -> str:
    """The UUID of the GPU this process sees as cuda:0, as NVML names it."""
    import torch

    return f"GPU-{torch.cuda.get_device_properties(0).uuid}"
