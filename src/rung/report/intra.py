"""The intra-kernel trace of one run, where its rungs kept one: the `scopes` rung's copy of
proton's Chrome trace (or any JSON artifact named for proton or a Chrome trace).

The trace's complete ("ph": "X") events are read twice: per kernel and scope, cycles per warp
and share of the warps' marked cycles, by `rung.common.proton_scopes.summarize` (the figures the scopes rung
itself reports); per lane (proton: a CTA on an SM, and a warp), the scopes in order, for a
timeline. Proton writes cycles as nanoseconds (it assumes 1 GHz), so a trace microsecond is a
thousand cycles. A JSON artifact in another shape (proton's tree) is still named and linked,
with the reason it is not drawn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung.common.proton_scopes import summarize
from rung.common.safe_files import Refused, read_beneath
from rung.spec import Run

NAMES = ("proton", "intra", "chrome_trace")  # besides the scopes rung's: an intra-kernel trace's name
MAX_TRACE_BYTES = 256 * 2**20  # as the scopes rung reads proton's
CYCLES_PER_TRACE_US = 1000  # proton's clock assumption: cycles written as nanoseconds


@dataclass
class IntraTrace:
    path: str
    kernels: list[dict[str, Any]] = field(default_factory=list)  # rung.common.proton_scopes.summarize's rows
    # (lane, [(scope, start, cycles)]) for the first lanes, starts in cycles from the first event
    lanes: list[tuple[str, list[tuple[str, float, float]]]] = field(default_factory=list)
    why_not_drawn: str = ""


def find_intra_trace(run: Run, max_lanes: int = 16) -> IntraTrace | None:
    """The first intra-kernel JSON artifact of `run` that reads as a Chrome trace; else the first
    one found, with why it is not drawn; None where the run kept none."""
    found = [
        a
        for r in run.rungs
        for a in r.artifacts
        if a.endswith(".json")
        and Path(a).name != "summary.json"
        and (r.name == "scopes" or any(n in Path(a).name.lower() for n in NAMES))
    ]
    traces = [read_chrome_trace(Path(a), max_lanes) for a in found]
    return next((t for t in traces if not t.why_not_drawn), traces[0] if traces else None)


def read_chrome_trace(path: Path, max_lanes: int) -> IntraTrace:
    try:  # a run's copy, opened as any file a solution may have had a hand in: no link, bounded
        data = json.loads(read_beneath(path.parent, path.name, MAX_TRACE_BYTES))
    except Refused as e:
        return IntraTrace(str(path), why_not_drawn=f"not read: {e.reason}")
    except (OSError, ValueError) as e:
        return IntraTrace(str(path), why_not_drawn=f"not readable as JSON: {e}")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    complete = [
        e
        for e in (events if isinstance(events, list) else [])
        if isinstance(e, dict) and e.get("ph") == "X" and {"name", "ts", "dur"} <= e.keys()
    ]
    kernels = summarize(complete)
    if not kernels:
        return IntraTrace(
            str(path), why_not_drawn='no complete ("ph": "X") events of warps: not a proton trace'
        )
    return IntraTrace(str(path), kernels, _lanes(complete, max_lanes))


def _lanes(events: list[dict[str, Any]], max_lanes: int) -> list[tuple[str, list[tuple[str, float, float]]]]:
    start = min(float(e["ts"]) for e in events)
    lanes: dict[str, list[tuple[str, float, float]]] = {}
    for e in sorted(events, key=lambda e: float(e["ts"])):
        lane = f"{e.get('pid', '')} {e.get('tid', '')}".strip()
        if lane in lanes or len(lanes) < max_lanes:
            at, cycles = (float(e["ts"]) - start) * CYCLES_PER_TRACE_US, float(e["dur"]) * CYCLES_PER_TRACE_US
            lanes.setdefault(lane, []).append((str(e["name"]), at, cycles))
    return list(lanes.items())
