"""CUPTI traces as torch.profiler writes them (Chrome trace format), read as calls (pure).

Every kernel, memcpy and memset carries its stream and the correlation id of the host call that
launched it; rung's timing wraps each timed call in a `rung::call` host range and its own work
(the L2 flush, the marker after the call, the poison fill of outputs the solution allocates) in
`rung::harness` ranges. A call's work is what was launched inside its range and not inside a
harness range, matched by correlation, not by time: a flush or a reference kernel still running
while the call's kernels start is never counted as the solution's. Shared by the solution
process's timing (`common/measure.py`, `common/poison.py`, `solution/kernel_names.py`) and the
controller's trace rung (`derived/trace.py`).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

CALL = "rung::call"
HARNESS = "rung::harness"
COPIES = ("gpu_memcpy", "gpu_memset")
DEVICE_WORK = ("kernel", *COPIES)
LAUNCHES = ("cuda_runtime", "cuda_driver")  # host calls that launch device work (Triton: the driver's)


def host_ranges(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The host ranges (torch.profiler's `record_function`) named `name`, in time order."""
    found = [e for e in events if e.get("cat") == "user_annotation" and e.get("name") == name]
    return sorted(found, key=lambda e: float(e["ts"]))


def enclosing(ranges: list[dict[str, Any]], launch: dict[str, Any]) -> dict[str, Any] | None:
    """The first of `ranges` on the launch's own thread that holds its start, or None."""
    ts, where = float(launch["ts"]), (launch.get("pid"), launch.get("tid"))
    for r in ranges:
        if (r.get("pid"), r.get("tid")) == where and float(r["ts"]) <= ts <= float(r["ts"]) + float(r["dur"]):
            return r
    return None


def launches_by_correlation(events: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in LAUNCHES and "correlation" in e.get("args", {})
    }


class RangeIndex:
    """Host ranges of one name, found by the thread and time of a launch. Ranges of one name on
    one thread follow each other, so the one that may hold a launch is the last to start before
    it (a bisect: a trace holds up to 100 calls of hundreds of launches each)."""

    def __init__(self, ranges: list[dict[str, Any]]) -> None:
        self.by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        for r in ranges:
            self.by_thread[(r.get("pid"), r.get("tid"))].append(r)
        self.starts = {k: [float(r["ts"]) for r in v] for k, v in self.by_thread.items()}

    def holding(self, launch: dict[str, Any]) -> dict[str, Any] | None:
        where, ts = (launch.get("pid"), launch.get("tid")), float(launch["ts"])
        i = bisect.bisect_right(self.starts.get(where, []), ts) - 1
        if i < 0:
            return None
        r = self.by_thread[where][i]
        return r if ts <= float(r["ts"]) + float(r["dur"]) else None


def work_per_call(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]] | None:
    """The kernels, copies and memsets each `rung::call` range launched (not from a
    `rung::harness` range inside it), in time order, one list per range; None if the trace has
    no such range. Work with no host record of its launch is nobody's: it is left out."""
    calls = host_ranges(events, CALL)
    if not calls:
        return None
    harness, holders = RangeIndex(host_ranges(events, HARNESS)), RangeIndex(calls)
    launches = launches_by_correlation(events)
    per_call: dict[int, list[dict[str, Any]]] = {id(c): [] for c in calls}
    for work in sorted((e for e in events if e.get("cat") in DEVICE_WORK), key=lambda e: float(e["ts"])):
        launch = launches.get(work.get("args", {}).get("correlation"))
        if launch is None or harness.holding(launch) is not None:
            continue
        holder = holders.holding(launch)
        if holder is not None:
            per_call[id(holder)].append(work)
    return [per_call[id(c)] for c in calls]


def span_and_busy_us(inside: list[dict[str, Any]]) -> tuple[float, float]:
    """A call's span (first start to last end) and the time its work kept the device busy."""
    span = max(float(e["ts"]) + float(e["dur"]) for e in inside) - float(inside[0]["ts"])
    return span, sum(float(e["dur"]) for e in inside)
