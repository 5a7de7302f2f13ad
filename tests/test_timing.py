"""The timing module's host-side parts that run without a GPU."""

import gc
import itertools
import random
import time

import pytest
import torch

from rung.common import timing
from rung.common.timing import _gc_paused


def test_the_collector_is_paused_while_sampling_and_restored_after() -> None:
    assert gc.isenabled()
    with _gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_restored_when_sampling_raises() -> None:
    with pytest.raises(RuntimeError), _gc_paused():
        raise RuntimeError("kernel crashed")
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    gc.disable()
    try:
        with _gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("pause_gc", [True, False])
def test_timed_samples_with_the_collector_as_its_policy_says(monkeypatch, pause_gc):
    seen = []
    monkeypatch.setattr(timing, "_warm_up", lambda call, policy, flush: 1e-5)
    monkeypatch.setattr(
        timing, "_sample", lambda call, policy, flush, host_s, after=None: seen.append(gc.isenabled()) or {}
    )
    policy = timing.Policy(
        warmup_s=0.0, min_samples=10, min_wall_s=0.1, target_rel_sem=0.005, max_s=1.0, pause_gc=pause_gc
    )
    timing.timed(lambda i: None, policy, flush=None)  # type: ignore[arg-type]
    assert seen == [not pause_gc]
    assert gc.isenabled()


def _policy(warmup_s: float) -> timing.Policy:
    return timing.Policy(warmup_s=warmup_s, min_samples=10, min_wall_s=0.1, target_rel_sem=0.005, max_s=1.0)


@pytest.fixture
def device_log(monkeypatch):
    """What the warm-up asks of the device, in order, with the CUDA calls recorded instead."""
    log: list[str] = []
    monkeypatch.setattr(timing, "_synchronize", lambda: log.append("sync"))
    monkeypatch.setattr(timing, "_sleep", lambda cycles: log.append("spin"))
    return log


def test_warm_up_first_makes_three_calls_one_at_a_time(device_log):
    host_s = timing._warm_up(
        lambda i: device_log.append(f"call {i}"), _policy(0.0), lambda: device_log.append("flush")
    )
    assert device_log == ["call 0", "sync", "call 1", "sync", "call 2", "sync"]
    assert 0 <= host_s < 1e-3


def test_warm_up_then_loads_the_device_the_way_samples_are_taken(device_log):
    def call(i: int) -> None:
        time.sleep(1e-3)
        device_log.append("call")

    host_s = timing._warm_up(call, _policy(0.06), lambda: device_log.append("flush"))
    loaded = device_log[6:]
    assert loaded.count("call") >= 10
    calls = [k for k, what in enumerate(loaded) if what == "call"]
    # each call flushed and queued behind a spin, in batches rather than one synchronisation per call
    assert all(loaded[k - 2 : k] == ["flush", "spin"] for k in calls)
    assert loaded[-1] == "sync"
    assert loaded.count("sync") < loaded.count("call")
    assert 1e-3 <= host_s < 0.05


def test_timing_uses_the_functions_it_captured_before_any_solution(monkeypatch):
    """A solution that replaces torch's timers does not change what rung measures with."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 1e-6)
    assert timing._synchronize is not torch.cuda.synchronize
    assert timing._elapsed is not torch.cuda.Event.elapsed_time


class _FakeDevice:
    """Events whose elapsed times come from `samples` in turn; no CUDA anywhere."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, samples: itertools.cycle) -> None:
        self.samples = samples
        self.clock = 0.0

        class Event:
            def __init__(self, enable_timing: bool = True) -> None:
                pass

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
