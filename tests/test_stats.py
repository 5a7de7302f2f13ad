"""The median's standard error (the stop rule built on it: tests/test_timing.py)."""

import random
import statistics

import pytest

from rung.common.stats import median_sem, ratio, relative_error, summary


def test_the_medians_error_is_the_whole_range_for_ten_samples():
    xs = sorted(float(x) for x in range(10))
    assert median_sem(xs) == pytest.approx(9 / (2 * 1.959964))


def test_the_medians_error_matches_its_spread_over_repeated_draws():
    """For normal samples the median's standard error is sqrt(pi / 2) times the mean's."""
    rng = random.Random(7)
    n = 400
    draws = [[rng.gauss(100.0, 1.0) for _ in range(n)] for _ in range(300)]
    spread = statistics.stdev(statistics.median(d) for d in draws)
    said = statistics.mean(median_sem(sorted(d)) for d in draws)
    assert said == pytest.approx(spread, rel=0.2)
    assert said == pytest.approx((3.14159 / 2) ** 0.5 / n**0.5, rel=0.2)


def test_a_heavy_tail_leaves_the_median_sure_and_the_mean_not():
    rng = random.Random(3)
    xs = [50.0 + rng.random() * 0.2 if k % 20 else 500.0 for k in range(1000)]
    s = summary(xs)
    assert s["rel_median_sem"] < 0.005 < s["rel_sem"]


def test_samples_spread_evenly_leave_the_median_unsure():
    xs = [float(40 + (k % 21)) for k in range(1000)]  # 40 to 60 in equal shares
    assert summary(xs)["rel_median_sem"] > 0.005


def test_a_ratio_carries_the_medians_errors_and_falls_back_to_the_means():
    a = {"median_ms": 2.0, "rel_median_sem": 0.03, "rel_sem": 0.5}
    b = {"median_ms": 1.0, "rel_median_sem": 0.04}
    assert ratio(a, b) == pytest.approx((2.0, 2.0 * 0.05))
    assert relative_error({"median_ms": 1.0, "rel_sem": 0.02}) == 0.02  # a figure kept from before
    assert relative_error({"median_ms": 1.0}) == 0.0
