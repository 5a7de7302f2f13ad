"""bench's headline figure from a CUPTI trace: the device span of each timed call, copies included."""

from __future__ import annotations

from rung.common.measure import call_spans


def _work(cat: str, name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}


def _call(ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "gpu_user_annotation", "name": "rung::call", "ts": ts, "dur": dur}


def test_a_copy_into_the_output_counts_in_the_span():
    """A `copy_` into a preallocated output is a memcpy: 100 us of it after a 10 us kernel must
    not leave the call at 10 us (a solution could hide its work in copies)."""
    events = [
        _work("kernel", "flush", 0, 50),
        _call(100, 200),
        _work("kernel", "scale", 100, 10),
        _work("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 112, 100),
        _work("gpu_memset", "Memset (Device)", 220, 5),
    ]
    s = call_spans(events)
    assert s["spans_ms"] == [0.125]  # 100 to 225 us: the memset's end
    assert s["busy_ms"] == 0.115 and abs(s["gap_ms"] - 0.010) < 1e-12
    assert s["kernels_per_call"] == 1 and s["copies_per_call"] == 2 and s["kernels"] == ["scale"]


def test_work_outside_the_call_ranges_does_not_count():
    events = [_work("kernel", "flush", 0, 50), _call(100, 20), _work("kernel", "k", 100, 10)]
    events.append(_work("gpu_memcpy", "Memcpy DtoH", 130, 40))  # after the range: not the call's
    assert call_spans(events)["spans_ms"] == [0.010]


def test_a_trace_without_call_ranges_or_kernels_is_an_error_not_a_figure():
    assert "error" in call_spans([_work("kernel", "k", 0, 10)])
    only_copy = [_call(0, 50), _work("gpu_memcpy", "Memcpy DtoD", 0, 40)]
    assert call_spans(only_copy) == {"error": "no kernel ran inside the call's GPU range"}
