"""The timing module's host-side parts that run without a GPU."""

import gc

import pytest

from rung import timing
from rung.timing import _gc_paused


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
    monkeypatch.setattr(timing, "_warm_up", lambda call, seconds: 1e-5)
    monkeypatch.setattr(
        timing, "_sample", lambda call, policy, flush, host_s: seen.append(gc.isenabled()) or {}
    )
    policy = timing.Policy(
        warmup_s=0.0, min_samples=10, min_wall_s=0.1, target_rel_sem=0.005, max_s=1.0, pause_gc=pause_gc
    )
    timing.timed(lambda i: None, policy, flush=None)  # type: ignore[arg-type]
    assert seen == [not pause_gc]
    assert gc.isenabled()
