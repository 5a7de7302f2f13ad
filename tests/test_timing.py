"""The timing module's host-side parts that run without a GPU."""

import gc

import pytest

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
