"""What a report shows, read from the store: every run of one problem, oldest first, each as
`rung history` sees it (views.version_row), the version the optimize loop would call best, and
that version's intra-kernel trace where its run kept one.

Read-only: the store is opened only in a workspace that already holds `.rung/`, and nothing in
it is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rung import views
from rung.errors import UsageError
from rung.optimize import score
from rung.report.intra import IntraTrace, find_intra_trace
from rung.spec import Device, RooflineCase, Run
from rung.store import Store


@dataclass
class Version:
    """One run as the page shows it: its history row and its roofline rung's case rows (FLOPs,
    bytes, measured and attainable time), empty where the roofline did not run."""

    run: Run
    row: dict[str, Any]
    roofline: list[RooflineCase]

    @property
    def timed(self) -> bool:
        return any(c.get("median_ms") for c in self.row["cases"])


@dataclass
class ReportData:
    problem: str
    workspace: Path
    versions: list[Version]
    best: Version | None
    best_source: str  # the best version's source as stored when it climbed; "" where none passed
    intra: IntraTrace | None

    def devices(self) -> list[Device]:
        """Each device the runs used, by name, as the latest run on it recorded it (ceilings
        are measured once per model and driver, so a later run carries the newer figures)."""
        by_name = {v.run.device.name: v.run.device for v in self.versions}
        return list(by_name.values())


def gather(workspace: Path, problem: str | None) -> ReportData:
    """The report of `problem` (a name), or of the latest run's problem when None; a problem
    with no runs gives a report with no versions. UsageError where no problem is named and the
    store holds no run to take one from."""
    store = Store(workspace)
    try:
        runs = store.runs()
        if problem is None and not runs:
            raise UsageError(f"no runs in {workspace}: name a problem, or climb one first (rung check)")
        name = problem if problem is not None else runs[-1].problem
        mine = [r for r in runs if r.problem == name]
        rows = views.versions(mine)
        versions = [Version(r, row, _roofline_cases(r)) for r, row in zip(mine, rows, strict=True)]
        best = _best(versions)
        source = store.source(best.run.solution.sha256) if best else ""
    finally:
        store.close()
    intra = find_intra_trace(best.run) if best else None
    return ReportData(name, workspace, versions, best, source, intra)


def _best(versions: list[Version]) -> Version | None:
    """The passing version with the lowest geometric-mean median (the optimize loop's score);
    where none was timed (a CPU-only machine), the latest passing one."""
    timed = [(s[0], v) for v in versions if (s := score(v.run)) is not None]
    if timed:
        return min(timed, key=lambda t: t[0])[1]
    return next((v for v in reversed(versions) if v.run.ok), None)


def _roofline_cases(run: Run) -> list[RooflineCase]:
    return [c for c in views.roofline_cases(run) if {"flops", "bytes", "measured_ms"} <= c.keys()]


def case_label(case: Any) -> str:
    """A benchmark case's keyword values as a short label: `rows=1024 cols=4096`."""
    if isinstance(case, str):  # the trace rung writes cases as their repr
        return case
    if isinstance(case, dict):
        return " ".join(f"{k}={v}" for k, v in case.items())
    return json.dumps(case)
