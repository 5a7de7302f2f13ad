"""trace: what the GPU did during one call, kernel by kernel (controller side, pure).

Read from the CUPTI traces the bench rung kept (`case<i>.trace.json`, torch.profiler's Chrome
trace format: every kernel, memcpy and memset with its stream and the correlation id of the host
call that launched it, and a `rung::call` host range around each timed call). A call's work is
what was launched inside its range and not inside a `rung::harness` range (rung's own work: the
L2 flush, the marker after the call, the poison fill of outputs the solution allocates), matched
by correlation, not by time: a flush or a reference kernel still running while the call's
kernels start is never counted as the solution's. Per benchmark case: kernels per call and, per kernel name, its launches per call,
median duration, share of the call's busy time, streams, and the launch shape the trace records
(grid, block, registers per thread, shared memory); the call's span against its busy time (the
launch gaps); copies and memsets inside the call (a `.item()` or `.cpu()` in the timed path shows
up here). The figures are medians over the profiled calls. Each kernel is attributed to the
solution's backend that owns it (`backends.owner_of` over the kernel languages the load rung found
in its source): a CuTe kernel to cute, its Triton epilogue to triton, what torch launched to torch.

The traces read are the judge's copies (`<run>/artifacts/bench/`, copied out of the solution's
scratch folder when the bench rung ended), opened without following a link; the summary goes to
`<run>/trace/`, a folder this rung makes.
"""

from __future__ import annotations

import bisect
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from rung import backends
from rung.common.copies import read_copy, run_of
from rung.common.safe_files import Refused, own_folder, write_new
from rung.spec import Device, RungResult, Status

CALL = "rung::call"
HARNESS = "rung::harness"
SHAPE_ARGS = {
    "grid": "grid",
    "block": "block",
    "registers per thread": "registers",
    "shared memory": "shared_bytes",
}
COPIES = ("gpu_memcpy", "gpu_memset")
DEVICE_WORK = ("kernel", *COPIES)
MAX_TRACE_BYTES = 256 * 2**20
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


def summarize(events: list[dict[str, Any]], found: list[Any] | None = None) -> dict[str, Any] | None:
    """One case's per-kernel summary from its trace events; None if no call range holds a kernel.
    Given the solution's backends (`found`), each kernel says which one it belongs to, and the
    summary each backend's share of the busy time."""
    per_name: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"durations_us": [], "streams": set(), "calls": 0}
    )
    spans, busy, copies, streams_per_call = [], [], [], []
    for inside in work_per_call(events) or []:
        kernels = [e for e in inside if e.get("cat") == "kernel"]
        if not kernels:
            continue
        span, busy_call = span_and_busy_us(inside)
        spans.append(span)
        busy.append(busy_call)
        copies.append(len(inside) - len(kernels))
        streams_per_call.append(len({_stream(e) for e in inside}))
        for name in {e["name"] for e in kernels}:
            per_name[name]["calls"] += 1
        for e in kernels:
            entry = per_name[e["name"]]
            entry["durations_us"].append(float(e["dur"]))
            entry["streams"].add(_stream(e))
            args = e.get("args", {})
            for key, short in SHAPE_ARGS.items():
                if key in args:
                    entry[short] = args[key]
    if not spans:
        return None
    n = len(spans)
    busy_us = statistics.median(busy)
    kernels_out = []
    for name, entry in per_name.items():
        d = entry.pop("durations_us")
        kernels_out.append(
            {
                "name": name,
                "launches_per_call": len(d) / n,
                "median_us": statistics.median(d),
                "share_of_busy": sum(d) / n / busy_us if busy_us else 0.0,
                **{k: v for k, v in entry.items() if k not in ("streams", "calls")},
                "streams": sorted(entry["streams"]),
            }
        )
    kernels_out.sort(key=lambda k: -k["share_of_busy"])
    span_us = statistics.median(spans)
    summary = {
        "calls": n,
        "kernels_per_call": sum(k["launches_per_call"] for k in kernels_out),
        "span_us": span_us,
        "busy_us": busy_us,
        "idle_us": max(0.0, span_us - busy_us),
        "streams": max(streams_per_call),
        "copies_per_call": statistics.median(copies),
        "kernels": kernels_out,
    }
    if found is not None:
        shares: dict[str, float] = defaultdict(float)
        for k in kernels_out:
            k["backend"] = backends.owner_of(k["name"], found).value
            shares[k["backend"]] += k["share_of_busy"]
        summary["share_of_busy_by_backend"] = dict(shares)
    return summary


def _stream(e: dict[str, Any]) -> Any:
    return e.get("args", {}).get("stream", e.get("tid"))


def trace(results: dict[str, RungResult], device: Device) -> RungResult:
    bench = results["bench"]
    # one per case, in order: the judge's copies of what the solution process wrote
    files = [Path(a) for a in bench.artifacts if a.endswith(".trace.json") and run_of(a) is not None]
    cases = bench.metrics.get("cases", [])
    if not files:
        return RungResult("trace", Status.SKIPPED, "the bench rung kept no CUPTI trace (events-only timing)")
    load = results.get("load")
    names = load.metrics.get("backends") if load is not None else None
    found = [b for name in names for b in backends.REGISTRY if b.BACKEND.value == name] if names else None
    summary: list[dict[str, Any]] = []
    lines = []
    for i, path in enumerate(files):
        label = str(cases[i]["case"]) if i < len(cases) and "case" in cases[i] else path.name
        try:
            events = json.loads(read_copy(path, MAX_TRACE_BYTES)).get("traceEvents", [])
        except Refused as e:
            lines.append(f"  {label}: trace not read ({e.reason})")
            continue
        except (OSError, ValueError, AttributeError) as e:
            lines.append(f"  {label}: trace unreadable ({e})")
            continue
        s = summarize(events, found)
        if s is None:
            lines.append(f"  {label}: no kernel inside a {CALL} range")
            continue
        summary.append({"case": label, **s})
        lines.append(_line(label, s))
    if not summary:
        return RungResult(
            "trace", Status.SKIPPED, "no trace held a kernel inside a timed call\n" + "\n".join(lines)
        )
    # <run>/trace/: a folder made here, never one inside the solution's scratch folder
    out = write_new(own_folder(files[0].parents[2] / "trace") / "summary.json", json.dumps(summary, indent=1))
    return RungResult(
        "trace",
        Status.OK,
        f"per-kernel times of {len(summary)} case(s), medians over the profiled calls\n" + "\n".join(lines),
        {"cases": summary},
        [str(out)],
    )


def _line(label: str, s: dict[str, Any]) -> str:
    top = s["kernels"][0]
    shape = " ".join(f"{k}={top[k]}" for k in ("grid", "block", "registers", "shared_bytes") if k in top)
    parts = [
        f"  {label}: {s['kernels_per_call']:g} kernel(s)/call on {s['streams']} stream(s), "
        f"busy {s['busy_us']:.1f} us of a {s['span_us']:.1f} us span (idle {s['idle_us']:.1f} us)",
        f"top {top['name'][:60]} {top['share_of_busy']:.0%} ({top['median_us']:.1f} us{', ' + shape if shape else ''})",
    ]
    if s["copies_per_call"]:
        parts.append(f"{s['copies_per_call']:g} copy/memset per call inside the timed range")
    if "share_of_busy_by_backend" in s:
        by = sorted(s["share_of_busy_by_backend"].items(), key=lambda kv: -kv[1])
        parts.append("busy by backend: " + ", ".join(f"{b} {share:.0%}" for b, share in by))
    return "; ".join(parts)
