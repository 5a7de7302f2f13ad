"""Measuring one function on one case: events with an adaptive stop, then a CUPTI pass.

Both sides use it: the solution process measures the solution (with its timed calls' outputs
checked in both passes, `after`), the judge measures the reference and the baseline. The headline
is the events pass's, taken without the profiler: a solution can tell that torch's profiler
records (one did less work under it and claimed 158% of roofline), and a profiler's host overhead
stretches the gaps between a call's kernels (a two-kernel matvec read 21 to 36 us under CUPTI,
13.2 to 13.7 us without, 12.1 us in Nsight Compute). The CUPTI pass attributes: kernels, copies,
busy time, gaps, and its per-call span (`cupti`). It brackets
every call with harness ranges (the L2 flush before it, a marker kernel on the call's stream
right after it returns), so its trace also says whether the solution left work running: device
work launched outside any call (by a thread of its own), or work of a call still running after
the marker that follows the call in its stream started (a side stream the call never joined).
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rung.common.cupti_trace import (
    CALL,
    DEVICE_WORK,
    HARNESS,
    enclosing,
    host_ranges,
    launches_by_correlation,
    span_and_busy_us,
    work_per_call,
)
from rung.common.stats import summary
from rung.common.timing import Flusher, Policy, timed

MARK_CYCLES = 1000  # the marker after each profiled call: a spin of about half a microsecond
LATE_SLACK_US = 1.0
CUPTI_MIN_CALLS, CUPTI_MAX_CALLS = 20, 100


class Walls:
    """Wall seconds per phase of a case (where the time to a verdict goes)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._t, 4)
        self._t = now


def measure(
    call: Callable[[int], Any],
    policy: Policy,
    flush: Flusher,
    trace: Path,
    after: Callable[[int], None] | None = None,
    sets: int = 1,
    after_profiled: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Events first (the headline: they decide when the figure is sure enough; the spin before
    each call hides its launch latency), then as many calls again (20 to 100) under CUPTI, whose
    per-call device span (the first kernel, copy or memset to the end of the last) is kept under
    `cupti` beside the kernels, busy time and gaps. Call indices run on from the events pass into
    the CUPTI pass (`cupti_calls` of them); `after` follows each call of the events pass,
    `after_profiled` each of the CUPTI pass. With `sets`
    input sets taken in turn (call i takes set i % sets), the median span of each set too
    (`per_set_median_ms`)."""
    wall = Walls()
    events = timed(call, policy, flush, after)
    wall.lap("events")
    calls = max(CUPTI_MIN_CALLS, min(int(events["samples"]), CUPTI_MAX_CALLS))
    made = 0  # the CUPTI pass's calls made: all of them once it returns, whatever its trace held
    try:
        cu = cupti(call, flush, trace, calls, after_profiled, first=int(events["samples"]))
        made = calls
    except Exception as e:
        cu = {"error": f"{type(e).__name__}: {e}"}
    wall.lap("cupti")
    public = {**_public(events), "wall_s": wall.laps}
    figures = {**public, "timing": "events", "cupti_calls": made}
    if "error" in cu:
        return {**figures, "cupti_error": cu["error"]}
    spans = cu.pop("spans_ms")
    which = [int(events["samples"]) + w for w in cu.pop("span_calls")]  # the calls' own indices
    figures = {**figures, **cu, "cupti": summary(spans)}
    if sets > 1:
        figures["per_set_median_ms"] = per_set_medians(spans, which, sets)
    return figures


def per_set_medians(spans: list[float], calls: list[int], sets: int) -> list[float]:
    """The median span of each input set's calls (call i took set i % sets), for the sets timed."""
    by_set: dict[int, list[float]] = {}
    for span, i in zip(spans, calls, strict=True):
        by_set.setdefault(i % sets, []).append(span)
    return [statistics.median(by_set[k]) for k in sorted(by_set)]


def guarded(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A figure that may not be had (a baseline that will not compile, a call a CUDA graph cannot
    capture): `fn()`, or the first line of why not."""
    try:
        return fn()
    except Exception as e:
        text = str(e).strip().splitlines()
        return {"error": f"{type(e).__name__}: {text[0] if text else ''}"}


def _public(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k not in ("raw_ms", "batches")}


def cupti(
    call: Callable[[int], Any],
    flush: Flusher,
    trace: Path,
    calls: int,
    after: Callable[[int], None] | None = None,
    first: int = 0,
) -> dict[str, Any]:
    """`calls` flushed calls (indices from `first`) under torch.profiler: per-call device span,
    busy time, gaps, kernels. `after(i)` as in the events pass, inside the harness range that
    follows the call (its copy is the harness's work, not the call's)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(first, first + calls):
            with record_function(HARNESS):
                flush()
            with record_function(CALL):
                call(i)
            with record_function(HARNESS):
                torch.cuda._sleep(MARK_CYCLES)
                if after is not None:
                    after(i)
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text()).get("traceEvents", [])
    return {**call_spans(events), **left_running(events)}


def call_spans(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Per `rung::call` range of a trace, over the work it launched: the span from the first
    device activity's start to the last one's end, kernels, copies and memsets alike (a copy is
    work the call asked for: a `copy_` into a preallocated output is a memcpy, not a kernel), the
    busy time, and the kernels."""
    per_call = work_per_call(events)
    if per_call is None:
        return {"error": "the trace has no range for the call"}
    spans, which, busy, names, copies = [], [], [], [], []
    for i, inside in enumerate(per_call):
        kernels = [e["name"] for e in inside if e.get("cat") == "kernel"]
        if not kernels:
            continue
        span_us, busy_us = span_and_busy_us(inside)
        spans.append(span_us / 1e3)
        which.append(i)
        busy.append(busy_us / 1e3)
        names.append(kernels)
        copies.append(len(inside) - len(kernels))
    if not spans:
        return {"error": "the calls launched no kernel"}
    return {
        "spans_ms": spans,
        "span_calls": which,  # the call each span is of: call i took input set i % sets
        "busy_ms": sorted(busy)[len(busy) // 2],
        "gap_ms": max(0.0, sorted(spans)[len(spans) // 2] - sorted(busy)[len(busy) // 2]),
        "kernels_per_call": len(names[0]),
        "copies_per_call": copies[0],
        "kernels": sorted({n for ns in names for n in ns})[:10],
    }


def left_running(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Device work the calls of a trace left behind: `outside_launches`, work launched from no
    call and no harness range (a thread of the solution's, still launching after its call
    returned), and `late_calls`, calls with work that ended after the marker following the call
    in its stream began (work on a stream the call never joined back). With names, for the message."""
    ranges = sorted(host_ranges(events, CALL) + host_ranges(events, HARNESS), key=lambda e: float(e["ts"]))
    launches = launches_by_correlation(events)
    owner: dict[int, list[dict[str, Any]]] = {id(r): [] for r in ranges}
    outside: list[str] = []
    for work in (e for e in events if e.get("cat") in DEVICE_WORK):
        launch = launches.get(work.get("args", {}).get("correlation"))
        if launch is None:
            continue  # no host record of the launch: nothing to say
        holder = enclosing(ranges, launch)
        if holder is None:
            outside.append(str(work.get("name", "?")))
        else:
            owner[id(holder)].append(work)
    late = 0
    for r, following in itertools.pairwise(ranges):
        if r.get("name") != CALL or following.get("name") != HARNESS or not owner[id(following)]:
            continue
        mark = min(float(w["ts"]) for w in owner[id(following)])
        ends = [float(w["ts"]) + float(w["dur"]) for w in owner[id(r)]]
        if ends and max(ends) > mark + LATE_SLACK_US:
            late += 1
    return {"outside_launches": len(outside), "outside_names": sorted(set(outside))[:5], "late_calls": late}
