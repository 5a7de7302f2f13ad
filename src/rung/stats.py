"""Summary statistics of timing samples, and ratios with their uncertainty. Pure Python."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100], of already sorted values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """median, mean, min, p20, p80, std, sem (all in ms), samples, and rel_sem (sem / mean)."""
    xs = sorted(samples_ms)
    n = len(xs)
    if n == 0:
        return {"samples": 0}
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    sem = std / math.sqrt(n)
    return {
        "median_ms": percentile(xs, 50),
        "mean_ms": mean,
        "min_ms": xs[0],
        "p20_ms": percentile(xs, 20),
        "p80_ms": percentile(xs, 80),
        "std_ms": std,
        "sem_ms": sem,
        "rel_sem": sem / mean if mean > 0 else math.inf,
        "samples": n,
    }


def ratio(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """a/b of two summaries' medians, with a one-sigma uncertainty from their relative SEMs."""
    r = a["median_ms"] / b["median_ms"]
    return r, r * math.hypot(a.get("rel_sem", 0.0), b.get("rel_sem", 0.0))


def geomean(values: Sequence[float]) -> float:
    vals = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan
