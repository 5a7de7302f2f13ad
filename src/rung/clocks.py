"""The GPU's clocks and throttle reasons, read through nvidia-smi while the GPU is busy.

`Reading.start()` launches nvidia-smi in the background (so it samples the clock while the timed
work runs); `.result()` collects it. No clock is ever set: rung measures the card as it finds it.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

FIELDS = ("clocks.sm", "clocks.max.sm", "clocks.default_applications.graphics", "clocks_event_reasons.active")
THROTTLED_BELOW = 0.75  # of the default application clock


class Reading:
    def __init__(self, proc: subprocess.Popen[str] | None) -> None:
        self.proc = proc

    @classmethod
    def start(cls) -> Reading:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return cls(None)
        cmd = [exe, "-i", "0", f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits"]
        return cls(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))

    def result(self) -> dict[str, Any]:
        if self.proc is None:
            return {"error": "nvidia-smi not found"}
        out, _ = self.proc.communicate(timeout=30)
        return parse(out)


def parse(line: str) -> dict[str, Any]:
    """One CSV line of FIELDS into {sm_mhz, max_sm_mhz, default_mhz, reasons, throttled}."""
    parts = [p.strip() for p in line.strip().split(",")]
    if len(parts) != len(FIELDS):
        return {"error": f"unexpected nvidia-smi output {line.strip()!r}"}

    def num(s: str) -> float:
        try:
            return float(s)
        except ValueError:
            return 0.0

    sm, top, default = num(parts[0]), num(parts[1]), num(parts[2])
    reasons = parts[3]
    return {
        "sm_mhz": sm,
        "max_sm_mhz": top,
        "default_mhz": default,
        "reasons": reasons,
        "throttled": bool(default) and sm < THROTTLED_BELOW * default,
    }
