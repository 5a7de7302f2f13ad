"""The trace rung reads bench's CUPTI traces: per-kernel times, launch gaps, copies in the call."""

from __future__ import annotations

import json

import pytest

from rung.spec import Device, RungResult, Status
from rung.trace import summarize, trace

H200 = Device("cuda", "NVIDIA H200", "sm_90")


def _kernel(name: str, ts: float, dur: float, stream: int = 7, **args) -> dict:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "ts": ts,
        "dur": dur,
        "tid": stream,
        "args": {"stream": stream, **args},
    }


def _call(ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "gpu_user_annotation", "name": "rung::call", "ts": ts, "dur": dur}


def two_calls() -> list[dict]:
    """Two timed calls: a 10 us main kernel and a 2 us epilogue 1 us later, and in the second call
    a device-to-host copy; a kernel outside any call (the L2 flush) must not count."""
    shape = {"grid": [1024, 1, 1], "block": [128, 1, 1], "registers per thread": 40, "shared memory": 0}
    return [
        _kernel("flush", 0, 50),
        _call(100, 20),
        _kernel("main", 100, 10, **shape),
        _kernel("epilogue", 111, 2),
        _kernel("flush", 200, 50),
        _call(300, 20),
        _kernel("main", 300, 10, **shape),
        _kernel("epilogue", 311, 2),
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy DtoH",
            "ts": 314,
            "dur": 1,
            "tid": 7,
            "args": {"stream": 7},
        },
    ]


def test_per_kernel_figures_are_medians_over_the_calls():
    s = summarize(two_calls())
    assert s["calls"] == 2 and s["kernels_per_call"] == 2 and s["streams"] == 1
    main, epilogue = s["kernels"]
    assert main["name"] == "main" and main["median_us"] == 10 and main["launches_per_call"] == 1
    assert main["grid"] == [1024, 1, 1] and main["registers"] == 40 and main["shared_bytes"] == 0
    assert epilogue["median_us"] == 2 and "grid" not in epilogue
    assert s["span_us"] == pytest.approx(14)  # median of 13 and 15 (the copy ends the second call)
    assert s["busy_us"] == pytest.approx(12.5)  # median of 12 and 13
    assert s["copies_per_call"] == 0.5
    assert main["share_of_busy"] == pytest.approx(10 / 12.5)


def test_a_trace_with_no_kernel_in_a_call_gives_nothing():
    assert summarize([_call(0, 10), _kernel("flush", 20, 5)]) is None
    assert summarize([_kernel("k", 0, 5)]) is None  # no call range at all


def test_the_rung_reads_each_case_and_skips_what_it_cannot(tmp_path):
    good, empty = tmp_path / "case0.trace.json", tmp_path / "case1.trace.json"
    good.write_text(json.dumps({"traceEvents": two_calls()}))
    empty.write_text(json.dumps({"traceEvents": [_call(0, 10)]}))
    cases = [{"case": {"n": 1}}, {"case": {"n": 2}}]
    bench = RungResult("bench", Status.OK, "", {"cases": cases}, [str(good), str(empty)])
    r = trace({"bench": bench}, H200)
    assert r.status == Status.OK and [c["case"] for c in r.metrics["cases"]] == ["{'n': 1}"]
    assert "top main 80%" in r.message and "{'n': 2}: no kernel inside a rung::call range" in r.message
    assert json.loads((tmp_path / "trace" / "summary.json").read_text())[0]["kernels"][0]["name"] == "main"
    nothing = trace({"bench": RungResult("bench", Status.OK, "", {"cases": cases}, [str(empty)])}, H200)
    assert nothing.status == Status.SKIPPED and "no trace held a kernel" in nothing.message
    missing = trace({"bench": RungResult("bench", Status.OK, "", {"cases": []}, [])}, H200)
    assert missing.status == Status.SKIPPED and "no CUPTI trace" in missing.message
