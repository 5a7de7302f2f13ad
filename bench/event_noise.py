"""Where the event samples of a short kernel get their heavy tail (GPU only).

    python bench/event_noise.py --out results/event_noise.json

For two short kernels (the tuned softmax at 1024x4096, ~8 us; the tuned vector add at 2^20,
~4 us), rung's event sampling (`rung.common.timing.timed`) under four conditions: the garbage collector
running and no lead-in spin at the start of a batch; the collector paused; the collector paused
and the lead-in (what rung does); and that with a clock reading started just before (what the
bench rung does: an NVML reading on a thread, nvidia-smi until 2026-12-05). Each condition
samples for a fixed second, then once more with rung's default stop. Reported: the spread of the bulk (p20, p80), the samples far out
in the tail and where in their batch they fell, the largest, the standard error of the mean, the
samples the default stop would need, and the collector's own pauses.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from fidelity import problem_call  # noqa: E402  (beside this file)

from rung.common.timing import Flusher, Policy, timed  # noqa: E402
from rung.judge.clocks import Reading  # noqa: E402

CONDITIONS = {  # name: (pause the collector, lead-in seconds, clock reading beside)
    "gc running, no lead-in": (False, 0.0, False),
    "gc paused, no lead-in": (True, 0.0, False),
    "gc paused, lead-in (rung)": (True, 5e-4, False),
    "rung + clock reading": (True, 5e-4, True),
}


class Pauses:
    """The collector's pauses while installed: count per generation, longest, total."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.longest_ms = 0.0
        self.total_ms = 0.0
        self._t = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
            return
        ms = (time.perf_counter() - self._t) * 1e3
        self.count[info["generation"]] += 1
        self.longest_ms = max(self.longest_ms, ms)
        self.total_ms += ms


def _run(call: Callable[[int], Any], policy: Policy, flush: Flusher, condition: str) -> dict[str, Any]:
    pause_gc, lead_in_s, smi_beside = CONDITIONS[condition]
    policy = dataclasses.replace(policy, pause_gc=pause_gc, lead_in_s=lead_in_s)
    pauses = Pauses()
    gc.callbacks.append(pauses)
    smi = Reading.start() if smi_beside else None
    try:
        t = time.perf_counter()
        r = timed(call, policy, flush)
        wall = time.perf_counter() - t
    finally:
        gc.callbacks.remove(pauses)
        if smi:
            smi.result()
    raw = r.pop("raw_ms")
    positions = [k for size in r.pop("batches") for k in range(size)]  # each sample's place in its batch
    bulk = r["p80_ms"] - r["p20_ms"]
    far = r["median_ms"] + max(10 * bulk, 0.002)
    tail = [(x, p) for x, p in zip(raw, positions, strict=True) if x > far]
    needed = (r["std_ms"] / (0.005 * r["mean_ms"])) ** 2
    return {
        **{k: r[k] for k in ("samples", "median_ms", "p20_ms", "p80_ms", "std_ms", "rel_sem", "stop")},
        "max_ms": max(raw),
        "tail_samples": len(tail),
        "tail_first_in_batch": sum(1 for _, p in tail if p == 0),
        "tail_ms": sorted(round(x, 4) for x, _ in tail)[-10:],
        "tail_positions": [p for _, p in tail][:20],
        "samples_for_0.5pct": round(needed),
        "wall_s": round(wall, 3),
        "gc_collections": pauses.count,
        "gc_longest_ms": round(pauses.longest_ms, 3),
        "gc_total_ms": round(pauses.total_ms, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=1.0, help="fixed sampling time per condition")
    args = ap.parse_args()
    flush = Flusher()
    default = Policy.from_knobs()
    fixed = dataclasses.replace(default, target_rel_sem=0.0, max_s=args.seconds)
    rows = []
    for problem, case in (("softmax", {"rows": 1024, "cols": 4096}), ("vector_add", {"n": 2**20})):
        call = problem_call(problem, "tuned.py", case)
        for condition in CONDITIONS:
            for stop, policy in (("fixed", fixed), ("default", default)):
                row = {"kernel": f"{problem} {case}", "condition": condition, "policy": stop}
                row.update(_run(call, policy, flush, condition))
                rows.append(row)
                print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "rows": rows})
    )


if __name__ == "__main__":
    main()
