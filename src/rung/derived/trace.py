"""trace: what the GPU did during one call, kernel by kernel (controller side, pure).

Read from the CUPTI traces the bench rung kept (`case<i>.trace.json`, torch.profiler's Chrome
trace format, a `rung::call` host range around each timed call), each call's work as
`common/cupti_trace.py` finds it. Per benchmark case: kernels per call and, per kernel name, its launches per call,
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

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from rung import backends
from rung.common.copies import read_copy, run_of
from rung.common.cupti_trace import CALL, span_and_busy_us, work_per_call
from rung.common.safe_files import Refused, own_folder, write_new
from rung.spec import Device, RungResult, Status

SHAPE_ARGS = {
    "grid": "grid",
    "block": "block",
    "registers per thread": "registers",
    "shared memory": "shared_bytes",
}
MAX_TRACE_BYTES = 256 * 2**20


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
