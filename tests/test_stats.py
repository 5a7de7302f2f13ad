"""The median's standard error and the stop rule built on it."""

import itertools
import random
import statistics

import pytest

from rung.common import timing
from rung.stats import median_sem, ratio, relative_error, summary


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


class _FakeDevice:
    """Events whose elapsed times come from `samples` in turn; no CUDA anywhere."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, samples: itertools.cycle) -> None:
        self.samples = samples
        self.clock = 0.0

        class Event:
            def __init__(self, enable_timing: bool = True) -> None:
                self.ms = 0.0

        def elapsed(begin: object, end: object) -> float:
            self.clock += 1e-4  # every sample costs 100 us of wall time
            return float(next(self.samples))

        monkeypatch.setattr(timing, "_Event", Event)
        monkeypatch.setattr(timing, "_record", lambda event: None)
        monkeypatch.setattr(timing, "_elapsed", elapsed)
        monkeypatch.setattr(timing, "_synchronize", lambda: None)
        monkeypatch.setattr(timing, "_sleep", lambda cycles: None)
        monkeypatch.setattr(timing, "_perf_counter", lambda: self.clock)


POLICY = timing.Policy(warmup_s=0.0, min_samples=10, min_wall_s=0.01, target_rel_sem=0.005, max_s=0.5)


def test_sampling_stops_once_the_median_is_sure_despite_a_heavy_tail(monkeypatch):
    # a 50 us call that the host holds up to 2 ms one time in ten: the mean's error stays high
    rng = random.Random(5)
    calls = [2.0 if k % 10 == 0 else 0.05 + rng.random() * 1e-4 for k in range(997)]
    _FakeDevice(monkeypatch, itertools.cycle(calls))
    got = timing._sample(lambda i: None, POLICY, lambda: None, 1e-5)
    assert got["stop"] == "converged"
    assert got["median_ms"] == pytest.approx(0.05, rel=0.01)
    assert got["rel_sem"] > POLICY.target_rel_sem  # the old rule would have gone on sampling


def test_sampling_goes_on_to_its_cap_while_the_median_is_unsure(monkeypatch):
    # 20 to 80 us in equal shares: 5000 samples (the cap) leave the median 0.8% unsure
    _FakeDevice(monkeypatch, itertools.cycle([0.02 + 0.001 * (k % 61) for k in range(61)]))
    got = timing._sample(lambda i: None, POLICY, lambda: None, 1e-5)
    assert got["stop"] == "time cap"
    assert got["rel_median_sem"] > POLICY.target_rel_sem
