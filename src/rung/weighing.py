"""How the optimize loop weighs a version: its score (the geometric mean of its benchmark cases'
medians, and their noise), whether it beats another by more than that noise, its percent of the
roofline, the GPU seconds its climb cost, and whether a stored run is one to resume from."""

from __future__ import annotations

from rung.common.stats import geomean, relative_error
from rung.spec import Run, Status


def score(run: Run) -> tuple[float, float] | None:
    """(geometric-mean median in ms, relative noise) of a passing, timed run; None otherwise."""
    bench = run.rung("bench")
    if not run.ok or bench is None or bench.status != Status.OK:
        return None
    cases = bench.metrics.get("cases", [])
    return geomean([c["median_ms"] for c in cases]), max((relative_error(c) for c in cases), default=0.0)


def roofline_pct(run: Run) -> float | None:
    roof = run.rung("roofline")
    return roof.metrics.get("min_pct_of_roofline") if roof and roof.status == Status.OK else None


def better(new: Run, best: Run) -> bool:
    a, b = score(new), score(best)
    if a is None or b is None:
        return False
    return a[0] < b[0] * (1 - 2 * max(a[1], b[1]))


def gpu_seconds(run: Run) -> float:
    """Seconds of the rungs that ran in a judge on a GPU (none on a CPU-only machine)."""
    if run.device.kind != "cuda":
        return 0.0
    return sum(r.seconds for r in run.rungs if r.name not in ("compile", "roofline", "dump"))


def resumable(run: Run) -> bool:
    """A stored run to resume from: one that finished and passed. Not one killed halfway or still
    climbing (no `finished`), nor one a person stopped (an INTERRUPTED rung: never PASS)."""
    return run.finished is not None and run.verdict == "PASS"
