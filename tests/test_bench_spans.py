"""bench's headline figure from a CUPTI trace: the device span of each timed call, copies included."""

from __future__ import annotations

from itertools import count

from rung.common.cupti_trace import CALL
from rung.common.measure import call_spans

_ids = count(1)


def _work(cat: str, name: str, ts: float, dur: float, launched_at: float) -> list[dict]:
    """Device work and the host launch it came from (matched by correlation id)."""
    corr = next(_ids)
    launch = {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launched_at, "dur": 1}
    launch.update(pid=1, tid=1, args={"correlation": corr})
    return [
        launch,
        {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}},
    ]


def _call(ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": CALL, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def test_a_copy_into_the_output_counts_in_the_span():
    """A `copy_` into a preallocated output is a memcpy: 100 us of it after a 10 us kernel must
    not leave the call at 10 us (a solution could hide its work in copies)."""
    events = [
        *_work("kernel", "flush", 0, 50, launched_at=0),
        _call(90, 10),
        *_work("kernel", "scale", 100, 10, launched_at=91),
        *_work("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 112, 100, launched_at=92),
        *_work("gpu_memset", "Memset (Device)", 220, 5, launched_at=93),
    ]
    s = call_spans(events)
    assert s["spans_ms"] == [0.125]  # 100 to 225 us: the memset's end
    assert s["busy_ms"] == 0.115 and abs(s["gap_ms"] - 0.010) < 1e-12
    assert s["kernels_per_call"] == 1 and s["copies_per_call"] == 2 and s["kernels"] == ["scale"]


def test_work_the_call_did_not_launch_does_not_count():
    """A flush launched before the call and still running as the call's kernel starts, and a copy
    launched after the call returned, are not the call's, whenever they ran."""
    events = [*_work("kernel", "flush", 95, 50, launched_at=0), _call(90, 5)]
    events += _work("kernel", "k", 100, 10, launched_at=91)
    events += _work("gpu_memcpy", "Memcpy DtoH", 105, 40, launched_at=96)
    assert call_spans(events)["spans_ms"] == [0.010]


def test_a_trace_without_call_ranges_or_kernels_is_an_error_not_a_figure():
    assert "error" in call_spans(_work("kernel", "k", 0, 10, launched_at=0))
    only_copy = [_call(0, 50), *_work("gpu_memcpy", "Memcpy DtoD", 0, 40, launched_at=1)]
    assert call_spans(only_copy) == {"error": "the calls launched no kernel"}


def test_each_span_knows_its_call_so_each_input_set_has_its_median():
    from rung.common.measure import per_set_medians

    # Call 1 launched no kernel (a copy only): spans belong to calls 0, 2 and 3, not 0, 1 and 2.
    events = [_call(0, 5), *_work("kernel", "k", 1, 10, launched_at=1)]
    events += [_call(100, 5), *_work("gpu_memcpy", "Memcpy DtoD", 101, 10, launched_at=101)]
    events += [_call(200, 5), *_work("kernel", "k", 201, 30, launched_at=201)]
    events += [_call(300, 5), *_work("kernel", "k", 301, 12, launched_at=301)]
    s = call_spans(events)
    assert s["span_calls"] == [0, 2, 3] and s["spans_ms"] == [0.010, 0.030, 0.012]
    # Two sets in turn: set 0 took calls 0 and 2, set 1 calls 1 and 3.
    assert per_set_medians(s["spans_ms"], s["span_calls"], 2) == [0.020, 0.012]
