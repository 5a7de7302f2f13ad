"""bench: per benchmark case, correctness on the very inputs to be timed, then device timing.

For each case: several input sets at distinct addresses (rotated, so neither output caching nor
L2 residency flatters the figure); the solution checked against the reference on the first set
(a wrong case is not timed); then the solution, the reference and the baseline (torch.compile of
the reference) each measured the same way (`measure`: event timing with an adaptive stop, then
as many calls again, 20 to 100 of them, under CUPTI, whose per-call device span, kernels and
copies alike, is the headline figure); for calls under 20 us, the per-call time of a CUDA graph
of many calls back to back (`graph`); the SM clock read at the start and end of sampling. Warm-up is the policy's for
the first timing, short after it (the GPU is hot, and each case's kernels were compiled by its
correctness check). Each case records where its wall time went (`wall_s`). Each finished case is
appended to `bench/partial.jsonl`, so a crash later keeps what was measured."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rung import knobs
from rung.clocks import Reading
from rung.rungs.correct import check_inputs, trial_seed
from rung.rungs.outcome import Failed, Skipped
from rung.spec import RungResult, Status
from rung.stats import geomean, ratio, summary
from rung.timing import Flusher, Policy, graph_timed, timed
from rung.trace import CALL, span_and_busy_us, work_per_call

GRAPH_BELOW_MS = 0.020
ROTATION_BYTES = 2 * 2**30  # input sets rotated per case: as many as fit in this, 2 to 8
CUPTI_MIN_CALLS, CUPTI_MAX_CALLS = 20, 100
HOT_WARMUP_S = 0.03  # warm-up once the GPU is hot: every timing after the first case's solution


class Walls:
    """Wall seconds per phase of a case (where the time to a verdict goes)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._t, 4)
        self._t = now


def bench(session: Any, params: dict[str, Any]) -> RungResult:
    if session.device != "cuda":
        raise Skipped("no CUDA device in the worker")
    cases = session.problem.benchmarks
    if not cases:
        raise Skipped("the problem lists no BENCHMARKS")
    out_dir = session.run_dir / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "partial.jsonl"
    warmup = session.profiler.wait() if session.profiler else {}
    policy, flush = Policy.from_knobs(), Flusher()
    hot = dataclasses.replace(policy, warmup_s=min(policy.warmup_s, HOT_WARMUP_S))
    results, artifacts = [], []
    for index, case in enumerate(cases):
        r, trace = _case(session, index, case, policy if index == 0 else hot, hot, flush, out_dir)
        results.append(r)
        artifacts.append(str(trace))
        with partial.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")
    speedups = [r["speedup_vs_reference"] for r in results if "speedup_vs_reference" in r]
    metrics: dict[str, Any] = {
        "cases": results,
        "median_ms": [r["median_ms"] for r in results],
        "speedup_vs_reference": geomean(speedups),
        "l2_flush_bytes": flush.buffer.numel() * 4,
        "throttled": any(r.get("throttled") for r in results),
        "profiler_warmup": warmup,
    }
    lines = [_line(r) for r in results]
    warn = "; samples taken while the SM clock was below 75% of its default" if metrics["throttled"] else ""
    return RungResult(
        "bench", Status.OK, f"{len(results)} cases timed{warn}\n" + "\n".join(lines), metrics, artifacts
    )


def _case(
    session: Any, index: int, case: dict[str, Any], policy: Policy, hot: Policy, flush: Flusher, out_dir: Path
) -> tuple[dict[str, Any], Path]:
    wall = Walls()
    seed = trial_seed(session.seed, 1000 + index, 0)
    first = session.inputs(case, seed)
    ok, message, _ = check_inputs(session, first)
    if not ok:
        raise Failed(
            f"benchmark case {case} (seed {seed}): {message}; not timed", {"case": case, "seed": seed}
        )
    sets = [first] + [session.inputs(case, seed + k) for k in range(1, rotation(first))]
    wall.lap("check")
    fn = session.entry

    def solution(i: int) -> Any:
        return fn(*sets[i % len(sets)])

    def reference(i: int) -> Any:
        return session.problem.reference(sets[i % len(sets)])

    before = Reading.start()  # nvidia-smi samples while the solution warms up
    sol = measure(solution, policy, flush, out_dir / f"case{index}.trace.json")
    wall.lap("solution")
    after = Reading.start()  # ... and while the reference runs, right after the solution's samples
    ref = measure(reference, hot, flush, out_dir / f"case{index}.reference.trace.json")
    wall.lap("reference")
    clocks = [before.result(), after.result()]
    wall.lap("clocks")
    r: dict[str, Any] = {"case": case, "input_sets": len(sets), **sol, "clocks": clocks}
    r["throttled"] = any(c.get("throttled") for c in clocks)
    r["reference"] = ref
    r["speedup_vs_reference"], r["speedup_vs_reference_err"] = ratio(ref, sol)
    if str(knobs.get("RUNG_BASELINE")) == "compile":
        r["compile"] = _baseline(session, sets, hot, flush, out_dir / f"case{index}.compile.trace.json")
        if "median_ms" in r["compile"]:
            r["speedup_vs_compile"], r["speedup_vs_compile_err"] = ratio(r["compile"], sol)
        wall.lap("baseline")
    if sol["median_ms"] < GRAPH_BELOW_MS:
        r["graph"] = _guarded(lambda: graph_timed(solution, sol["median_ms"], hot, flush))
        wall.lap("graph")
    cost = session.problem.cost(case)
    if cost:
        r.update({"flops": cost["flops"], "bytes": cost["bytes"], "math": cost.get("math") or _math(first)})
        seconds = sol["median_ms"] / 1e3
        r["achieved_gbps"] = cost["bytes"] / seconds / 1e9
        r["achieved_tflops"] = cost["flops"] / seconds / 1e12
    r["wall_s"] = wall.laps
    return r, out_dir / f"case{index}.trace.json"


def measure(call: Callable[[int], Any], policy: Policy, flush: Flusher, trace: Path) -> dict[str, Any]:
    """Events first (they decide when the figure is sure enough), then as many calls again (20 to
    100) under CUPTI: the headline figures are CUPTI's per-call device span (the first kernel,
    copy or memset to the end of the last), which leaves out the launch latency every event pair
    includes; the event figures stay under `events`. Where CUPTI gives nothing, the event figures
    are the headline."""
    wall = Walls()
    events = timed(call, policy, flush)
    wall.lap("events")
    calls = max(CUPTI_MIN_CALLS, min(int(events["samples"]), CUPTI_MAX_CALLS))
    try:
        cu = cupti(call, flush, trace, calls)
    except Exception as e:
        cu = {"error": f"{type(e).__name__}: {e}"}
    wall.lap("cupti")
    public = {**_public(events), "wall_s": wall.laps}
    if "error" in cu:
        return {**public, "timing": "events", "cupti_error": cu["error"]}
    spans = cu.pop("spans_ms")
    return {**summary(spans), "timing": "cupti", **cu, "events": public}


def rotation(inputs: tuple[Any, ...]) -> int:
    """How many input sets a case rotates through: as many as fit in ROTATION_BYTES, 2 to 8."""
    size = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
    return max(2, min(8, ROTATION_BYTES // max(size, 1)))


def _math(inputs: tuple[Any, ...]) -> str:
    """The ceiling a case's FLOPs run against, from its first floating input's dtype."""
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            return {torch.float16: "fp16_tensor", torch.bfloat16: "bf16_tensor"}.get(t.dtype, "fp32_vector")
    return "fp32_vector"


def _public(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k not in ("raw_ms", "batches")}


def _guarded(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return fn()
    except Exception as e:
        return {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"}


def _baseline(
    session: Any, sets: list[tuple[Any, ...]], policy: Policy, flush: Flusher, trace: Path
) -> dict[str, Any]:
    reference = session.problem.reference

    def eager(*inputs: Any) -> Any:
        return reference(inputs)

    compiled = torch.compile(eager)
    return _guarded(lambda: measure(lambda i: compiled(*sets[i % len(sets)]), policy, flush, trace))


def cupti(call: Callable[[int], Any], flush: Flusher, trace: Path, calls: int) -> dict[str, Any]:
    """`calls` flushed calls under torch.profiler: per-call device span, busy time, gaps, kernels."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            flush()
            with record_function(CALL):
                call(i)
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    return call_spans(json.loads(trace.read_text()).get("traceEvents", []))


def call_spans(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Per `rung::call` GPU range of a trace: the span from the first device activity's start to
    the last one's end, kernels, copies and memsets alike (a copy is work the call asked for: a
    `copy_` into a preallocated output is a memcpy, not a kernel), the busy time, and the kernels."""
    per_call = work_per_call(events)
    if per_call is None:
        return {"error": "the trace has no GPU range for the call"}
    spans, busy, names, copies = [], [], [], []
    for inside in per_call:
        kernels = [e["name"] for e in inside if e.get("cat") == "kernel"]
        if not kernels:
            continue
        span_us, busy_us = span_and_busy_us(inside)
        spans.append(span_us / 1e3)
        busy.append(busy_us / 1e3)
        names.append(kernels)
        copies.append(len(inside) - len(kernels))
    if not spans:
        return {"error": "no kernel ran inside the call's GPU range"}
    return {
        "spans_ms": spans,
        "busy_ms": sorted(busy)[len(busy) // 2],
        "gap_ms": max(0.0, sorted(spans)[len(spans) // 2] - sorted(busy)[len(busy) // 2]),
        "kernels_per_call": len(names[0]),
        "copies_per_call": copies[0],
        "kernels": sorted({n for ns in names for n in ns})[:10],
    }


def _line(r: dict[str, Any]) -> str:
    parts = [
        f"{r['case']}: {r['median_ms'] * 1e3:.1f} us (±{r['sem_ms'] / r['median_ms'] * 100:.2f}%, n={r['samples']})"
    ]
    if "achieved_gbps" in r:
        parts.append(f"{r['achieved_gbps']:.0f} GB/s {r['achieved_tflops']:.1f} TFLOP/s")
    parts.append(f"x{r['speedup_vs_reference']:.2f}±{r['speedup_vs_reference_err']:.2f} vs reference")
    if "speedup_vs_compile" in r:
        parts.append(f"x{r['speedup_vs_compile']:.2f} vs torch.compile")
    if "graph" in r and "median_ms" in r["graph"]:
        parts.append(f"graph {r['graph']['median_ms'] * 1e3:.1f} us")
    if r.get("timing") == "cupti":
        copies = f" + {r['copies_per_call']} copy/memset" if r.get("copies_per_call") else ""
        parts.append(
            f"{r['kernels_per_call']} kernel(s){copies}, events {r['events']['median_ms'] * 1e3:.1f} us"
        )
    else:
        parts.append(f"events only: {r.get('cupti_error', '')}")
    return "  " + "; ".join(parts)
