"""The trace rung reads bench's CUPTI traces: per-kernel times, launch gaps, copies in the call."""

from __future__ import annotations

import json
from itertools import count

import pytest

from rung import backends
from rung.common.cupti_trace import CALL, HARNESS, host_ranges, launches_by_correlation
from rung.derived.trace import summarize, trace
from rung.spec import Device, RungResult, Status
from tests.conftest import ROOT

H200 = Device("cuda", "NVIDIA H200", "sm_90")


_ids = count(1)


def _launched(cat: str, name: str, ts: float, dur: float, at: float, stream: int = 7, **args) -> list[dict]:
    """Device work and the host launch (at host time `at`, thread 1) it came from, by correlation."""
    corr = next(_ids)
    launch = {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": at, "dur": 1, "pid": 1, "tid": 1}
    launch["args"] = {"correlation": corr}
    work = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": stream}
    work["args"] = {"stream": stream, "correlation": corr, **args}
    return [launch, work]


def _kernel(name: str, ts: float, dur: float, at: float, **args) -> list[dict]:
    return _launched("kernel", name, ts, dur, at, **args)


def _range(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def _call(ts: float, dur: float) -> dict:
    return _range(CALL, ts, dur)


def two_calls() -> list[dict]:
    """Two timed calls: a 10 us main kernel and a 2 us epilogue 1 us later, and in the second call
    a device-to-host copy; the L2 flush, launched from rung's harness range, must not count."""
    shape = {"grid": [1024, 1, 1], "block": [128, 1, 1], "registers per thread": 40, "shared memory": 0}
    return [
        _range(HARNESS, 0, 1),
        *_kernel("flush", 0, 50, at=0.5),
        _call(90, 5),
        *_kernel("main", 100, 10, at=91, **shape),
        *_kernel("epilogue", 111, 2, at=92),
        _range(HARNESS, 195, 1),
        *_kernel("flush", 200, 50, at=195.5),
        _call(290, 5),
        *_kernel("main", 300, 10, at=291, **shape),
        *_kernel("epilogue", 311, 2, at=292),
        *_launched("gpu_memcpy", "Memcpy DtoH", 314, 1, at=293),
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
    assert summarize([_call(0, 10), *_kernel("flush", 20, 5, at=15)]) is None
    assert summarize(_kernel("k", 0, 5, at=0)) is None  # no call range at all


def test_only_the_kernels_the_solution_launched_count_not_rungs_or_the_reference():
    """Planted: rung's poison fill of an output the solution allocates runs inside the call (in a
    harness range within it), an L2 flush launched before the call is still running when the call's
    kernel starts, and the reference's kernel runs during the call's span from another launch.
    Counted by time, all three would be the solution's; by who launched them, none is."""
    events = [
        _range(HARNESS, 0, 1),
        *_kernel("flush", 0, 12, at=0.5),
        _call(2, 20),
        _range(HARNESS, 3, 2),  # poisoned_allocations: torch.empty inside the call, then the fill
        *_kernel("at::FillFunctor<int>", 10, 3, at=4),
        *_kernel("softmax_kernel", 13, 100, at=6),
        *_kernel("reference_exp_kernel", 50, 5, at=30),  # launched after the call's range ended
    ]
    s = summarize(events)
    assert s is not None and [k["name"] for k in s["kernels"]] == ["softmax_kernel"]
    assert s["kernels_per_call"] == 1 and s["busy_us"] == 100 and s["span_us"] == 100


def test_the_rung_reads_each_case_and_skips_what_it_cannot(tmp_path):
    copies = tmp_path / "artifacts" / "bench"  # the judge's copies of the solution's traces
    copies.mkdir(parents=True)
    good, empty = copies / "case0.trace.json", copies / "case1.trace.json"
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


def test_the_poison_fill_runs_in_a_harness_range_inside_the_call(tmp_path):
    """Real torch.profiler on the CPU: the fill of an output the solution allocates inside its call
    is recorded inside a `rung::harness` range, the mark every reader of the call's work leaves out."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from rung.common.cupti_trace import enclosing, host_ranges
    from rung.common.poison import poisoned_allocations

    with profile(activities=[ProfilerActivity.CPU]) as prof, record_function(CALL), poisoned_allocations():
        torch.empty(64)
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    fills = [e for e in events if e.get("cat") == "cpu_op" and e.get("name") == "aten::fill_"]
    assert fills and all(enclosing(host_ranges(events, HARNESS), f) for f in fills)
    assert all(enclosing(host_ranges(events, CALL), f) for f in fills)


CAPTURED = ROOT / "tests" / "fixtures" / "profiler" / "softmax_case0.trace.json"
HARNESS_KERNELS = ("vectorized_elementwise_kernel", "reduce_kernel", "spin_kernel", "Memset (Device)")


def _captured() -> list[dict]:
    """bench's CUPTI trace of the tuned softmax's first case on an H100 (bench/capture_artifacts.py,
    cut by bench/cut_fixtures.py): three timed calls between rung's L2 flush, its spin and its
    markers, each launched from a `rung::harness` range."""
    return json.loads(CAPTURED.read_text())["traceEvents"]


def test_a_captured_trace_counts_the_solutions_kernel_alone():
    events = _captured()
    device_work = {e["name"] for e in events if e.get("cat") in ("kernel", "gpu_memset")}
    assert all(any(h in n for n in device_work) for h in HARNESS_KERNELS)  # rung's work is in it
    s = summarize(events, backends.detect_all("import triton\nimport torch"))
    assert s is not None and s["calls"] == 3 and s["copies_per_call"] == 0
    (k,) = s["kernels"]
    assert k["name"] == "softmax_kernel" and k["launches_per_call"] == 1 and k["backend"] == "triton"
    assert k["grid"] == [1024, 1, 1] and k["block"] == [128, 1, 1] and k["registers"] == 54
    assert 5 < k["median_us"] < 20 and s["idle_us"] < 0.1 * s["span_us"]


def test_a_captured_trace_with_rungs_work_moved_into_the_calls_counts_it():
    """Must fail: the same trace with every harness launch moved into the timed call after it and
    its harness range dropped. Attribution follows the ranges, so rung's flush, memset and spin
    now count as the solution's: the clean reading above is the ranges' doing, not the names'."""
    events = _captured()
    calls = host_ranges(events, CALL)
    launches = launches_by_correlation(events)
    for work in (e for e in events if e.get("cat") in ("kernel", "gpu_memset")):
        launch = launches[work["args"]["correlation"]]
        later = [c for c in calls if c["ts"] + c["dur"] > launch["ts"]]
        if work["name"] != "softmax_kernel" and later:
            launch["ts"] = later[0]["ts"] + 0.5
    events = [e for e in events if e.get("name") != HARNESS]
    s = summarize(events, [])
    assert s is not None and s["kernels_per_call"] > 1
    assert any("spin_kernel" in k["name"] for k in s["kernels"])
