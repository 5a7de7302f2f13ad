"""Summary statistics of timing samples, and ratios with their uncertainty. Pure Python: it runs
in the solution process too, whose imports stay torch's and rung's own.

The figures rung reports are medians, so their uncertainty is the median's: a distribution-free
interval from order statistics (the ranks a binomial(n, 1/2) puts 95% of its mass between),
stated as a standard error. Device timings have a heavy tail (a call now and then held up by the
host), which the mean's standard error carries and the median does not."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100], of already sorted values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


def median_sem(sorted_values: Sequence[float]) -> float:
    """The median's standard error, distribution-free: the half-width of the 95% interval between
    the order statistics of ranks n/2 -+ Z95 * sqrt(n) / 2 (normal approximation to the binomial,
    widened to whole ranks), over Z95. Conservative for few samples (at n = 10 the interval is
    the whole range). 0 for fewer than two samples, as the mean's standard error is."""
    n = len(sorted_values)
    if n < 2:
        return 0.0
    half = Z95 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return (sorted_values[hi] - sorted_values[lo]) / (2 * Z95)


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """median, mean, min, p20, p80, std, sem (the mean's), median_sem (all in ms), samples,
    rel_sem (sem / mean) and rel_median_sem (median_sem / median): how sure the median is, the
    figure that bench reports and stops on."""
    xs = sorted(samples_ms)
    n = len(xs)
    if n == 0:
        return {"samples": 0}
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    sem = std / math.sqrt(n)
    median = percentile(xs, 50)
    median_error = median_sem(xs)
    return {
        "median_ms": median,
        "mean_ms": mean,
        "min_ms": xs[0],
        "p20_ms": percentile(xs, 20),
        "p80_ms": percentile(xs, 80),
        "std_ms": std,
        "sem_ms": sem,
        "rel_sem": sem / mean if mean > 0 else math.inf,
        "median_sem_ms": median_error,
        "rel_median_sem": median_error / median if median > 0 else math.inf,
        "samples": n,
    }


def ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[float, float]:
    """a/b of two summaries' medians, with a one-sigma uncertainty from the medians' relative
    standard errors."""
    r = a["median_ms"] / b["median_ms"]
    return r, r * math.hypot(relative_error(a), relative_error(b))


def relative_error(s: Mapping[str, Any]) -> float:
    """How sure a summary's median is, relative to it: its standard error where the summary has
    one, else (figures kept from before it was computed) the mean's; 0 where neither is known."""
    value = s.get("rel_median_sem", s.get("rel_sem", 0.0))
    return float(value)


def geomean(values: Sequence[float]) -> float:
    vals = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan
