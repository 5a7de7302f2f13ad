"""bench: per benchmark case, correctness on the very inputs to be timed, then device timing,
with every timed call's answer liable to be checked.

For each case: several input sets at distinct addresses, placed in the solution process
(rotated, so neither output caching nor L2 residency flatters the figure); the solution checked
against the reference on the first set (a wrong case is not timed); then the solution process
times the solution (`rung.solution.bench`: events with an adaptive stop, the headline, taken
with the profiler off; then 20 to 100 calls under CUPTI, which attribute kernels, copies, busy
time and gaps; for calls under 20 us, a CUDA graph of many calls back to back), copying the
outputs of timed calls drawn from a key the judge makes (each pass's own: events, CUPTI, the
graph's replays) into slots the judge reads. The judge then checks, and any failure fails the
case: the copies came from the calls its key drew; every copied output against its own reference
for that call's input set (an answer that goes stale or wrong only while timed, under the
profiler or under stream capture); no device work launched outside a call or left running after
it; no timer or comparison function replaced; no thread left running; the reported event time
within the wall clock the judge measured around the sampling; one input set, changed in one
element after timing, answered anew (a content cache). Other processes NVML saw on the GPU while
the case was timed are named (`shared_gpu`). Then the judge times the
reference and the baseline (torch.compile of the reference) itself, the same way, while the
solution process waits, or reuses their figures from an earlier check of the same problem, case
and GPU (`rung.judge.kept_timings`: neither depends on the solution). The SM clock is read while
the solution warms up and while the reference is timed. Warm-up is the policy's for the first
timing, short after it. Each case records where its wall time went
(`wall_s`). Each finished case is appended to `bench/partial.jsonl`, so a crash later keeps what
was measured."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from rung import knobs
from rung.common.measure import Walls, guarded, measure
from rung.common.stats import geomean, ratio
from rung.common.timing import Flusher, Policy
from rung.judge import kept_timings
from rung.judge.clocks import Reading
from rung.judge.rungs.bench_checks import check_content_cache, check_graph, check_timed
from rung.judge.rungs.bench_sizes import free_bytes, math_of, read_bytes, rotation, snapshots
from rung.judge.rungs.bench_words import case_line, idle_between_kernels, method, sets_apart, shared_gpu
from rung.judge.rungs.correct import check_against, trial_seed
from rung.judge.rungs.outcome import Failed, Skipped
from rung.spec import BenchCase, RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session

GRAPH_BELOW_MS = 0.020
GRAPH_SLOT_BYTES = 2**28  # a graph pass runs only for calls under GRAPH_BELOW_MS: small outputs
HOT_WARMUP_S = 0.03  # warm-up once the GPU is hot: every timing after the first case's solution


def bench(session: Session, params: dict[str, Any]) -> RungResult:
    if session.device != "cuda":
        raise Skipped("no CUDA device in the judge")
    cases = session.problem.benchmarks
    if not cases:
        raise Skipped("the problem lists no BENCHMARKS")
    out_dir = session.run_dir / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "partial.jsonl"
    policy, flush = Policy.from_knobs(), Flusher()
    hot = dataclasses.replace(policy, warmup_s=min(policy.warmup_s, HOT_WARMUP_S))
    results: list[BenchCase] = []
    artifacts = []
    for index, case in enumerate(cases):
        r, trace = _case(session, index, case, policy if index == 0 else hot, hot, flush, out_dir)
        results.append(r)
        artifacts.append(str(trace))
        with partial.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")
        session.progress("bench", index + 1, len(cases), case)
    # for the profile rung's witness (`rung.judge.witness`): Nsight Compute profiles a case's call too
    session.bench_medians = {i: r["median_ms"] for i, r in enumerate(results)}
    speedups = [r["speedup_vs_reference"] for r in results if "speedup_vs_reference" in r]
    metrics: dict[str, Any] = {
        "cases": results,
        "median_ms": [r["median_ms"] for r in results],
        "speedup_vs_reference": geomean(speedups),
        "l2_flush_bytes": results[0].get("l2_flush_bytes", 0) if results else 0,
        "throttled": any(r.get("throttled") for r in results),
        "profiler_warmup": results[0].get("profiler_warmup", {}) if results else {},
        "timed_outputs_checked": sum(r["timed_outputs_checked"] for r in results),
    }
    lines = [case_line(r) for r in results] + [
        f"  method: {m}" for m in dict.fromkeys(r["method"] for r in results)
    ]
    lines += [f"  {said}" for r in results if (said := sets_apart(r))]
    lines += [f"  {said}" for r in results if (said := idle_between_kernels(r))]
    shared = sorted({p for r in results for p in r["shared_gpu"]})
    metrics["shared_gpu"] = shared
    warn = "; samples taken while the SM clock was below 75% of its default" if metrics["throttled"] else ""
    if shared:
        warn += f"; timed while other processes used this GPU ({', '.join(map(str, shared[:5]))}): figures may be slow"
    return RungResult(
        "bench", Status.OK, f"{len(results)} cases timed{warn}\n" + "\n".join(lines), metrics, artifacts
    )


def _case(
    session: Session,
    index: int,
    case: dict[str, Any],
    policy: Policy,
    hot: Policy,
    flush: Flusher,
    out_dir: Path,
) -> tuple[BenchCase, Path]:
    wall = Walls()
    seed = trial_seed(session.seed, 1000 + index, 0)
    session.at = f"benchmark case {case} (seed {seed})"
    first = session.inputs(case, seed)
    expected = session.reference(first, precise=False)
    precise = session.reference(first, precise=True)
    ok, message, _ = check_against(session, first, expected, precise)
    # set 0's float64 reference, handed to the timed calls' checks, which let it go once used
    precise_by_set = {0: precise}
    del precise
    if not ok:
        raise Failed(
            f"benchmark case {case} (seed {seed}): {message}; not timed", {"case": case, "seed": seed}
        )
    specs = session.expected(expected)
    proc = session.solution
    proc.release()
    many = rotation(first, free_bytes(), int(knobs.get("RUNG_BENCH_SETS")), specs)
    sets = [first] + [session.inputs(case, seed + k) for k in range(1, many)]
    placed = [proc.place(s) for s in sets]
    slot_ids, slots = [], []
    for _ in range(snapshots(specs) + (sum(s.nbytes for s in specs) <= GRAPH_SLOT_BYTES)):
        ids, views = proc.allocate(specs)
        slot_ids.append(ids)
        slots.append(views)
    wall.lap("check")
    # the last slot, where outputs are small enough for a graph pass to run, is the graph's
    graph_slot = len(slot_ids) - 1 if len(slot_ids) > snapshots(specs) else None
    # What the judge's allocator holds but no longer uses (earlier cases, float64 references) is
    # memory the solution process cannot have: on an 80 GB GPU a 4 GiB case ran out of it.
    torch.cuda.empty_cache()
    trace = session.run_dir / "solution" / "bench" / f"case{index}.trace.json"
    trace.parent.mkdir(parents=True, exist_ok=True)
    ours = {os.getpid(), *([proc.pid] if proc.pid else [])}
    before = Reading.start(
        ours
    )  # NVML reads the clock (and who else is on the GPU) while the solution warms up
    check_key = secrets.token_bytes(16)  # which timed calls are checked: the judge's draw alone
    began = time.perf_counter()
    try:
        sol = proc.request(
            "bench",
            {
                "sets": [p.tree for p in placed],
                "slots": slot_ids[: snapshots(specs)],
                "graph_slot": slot_ids[graph_slot] if graph_slot is not None else [],
                "check_key": check_key.hex(),
                "policy": dataclasses.asdict(policy),
                "trace": str(trace),
                "graph_below_ms": GRAPH_BELOW_MS,
            },
            session.timeout_s,
        )
        held_s = time.perf_counter() - began
        wall.lap("solution")
        timed_slots = slots[: snapshots(specs)]
        checked = check_timed(
            session, case, sets, (expected, precise_by_set), sol, (timed_slots, check_key), held_s
        )
        del precise_by_set
        if graph_slot is not None:
            checked += check_graph(session, case, sets, expected, sol, (slots[graph_slot], check_key))
        check_content_cache(session, case, sets, placed)
    finally:
        for p in placed:
            proc.free(p.ids, p.local)
        for ids, views in zip(slot_ids, slots, strict=True):
            proc.free(ids, views)
    wall.lap("timed_checks")
    kept = _keeper(session, case, len(sets), hot, flush)
    # ... and right after the solution's samples, while the reference runs where it is timed now
    # (a kept reference timing must not cost the reading that shows the samples' clocks held)
    after = Reading.start(ours)

    def time_reference() -> dict[str, Any]:
        return measure(
            lambda i: session.problem.reference(sets[i % len(sets)]),
            hot,
            flush,
            out_dir / f"case{index}.reference.trace.json",
        )

    ref = kept("reference", time_reference)
    wall.lap("reference")
    clocks = [before.result(), after.result()]
    wall.lap("clocks")
    # The solution process's figures arrive as JSON (summary()'s keys and its CUPTI pass's): the
    # case is a BenchCase from here, and every key the judge adds below is checked against it.
    r = cast(BenchCase, {"case": case, "input_sets": len(sets), **_public(sol), "clocks": clocks})
    r["method"] = method(r)
    r["timed_outputs_checked"] = checked
    r["throttled"] = any(c.get("throttled") for c in clocks)
    r["shared_gpu"] = shared_gpu(clocks)
    r["reference"] = ref
    r["speedup_vs_reference"], r["speedup_vs_reference_err"] = ratio(ref, r)
    if str(knobs.get("RUNG_BASELINE")) == "compile":
        r["compile"] = kept(
            "compile",
            lambda: _baseline(session, sets, hot, flush, out_dir / f"case{index}.compile.trace.json"),
        )
        if "median_ms" in r["compile"]:
            r["speedup_vs_compile"], r["speedup_vs_compile_err"] = ratio(r["compile"], r)
        wall.lap("baseline")
    cost = session.roofline_cost(case, first)
    if cost:
        r.update({"flops": cost["flops"], "bytes": cost["bytes"], "math": cost.get("math") or math_of(first)})
        r["input_bytes"] = read_bytes(first, specs)
        if cost.get("cost_estimated"):
            r.update({"cost_estimated": True, "flops_by_op": cost["flops_by_op"]})
        seconds = r["median_ms"] / 1e3
        r["achieved_gbps"] = cost["bytes"] / seconds / 1e9
        r["achieved_tflops"] = cost["flops"] / seconds / 1e12
    r["wall_s"] = {**wall.laps, "in_solution_process": sol.get("wall_s", {})}
    return r, trace


def _keeper(
    session: Session, case: dict[str, Any], input_sets: int, policy: Policy, flush: Flusher
) -> Callable[[str, Callable[[], dict[str, Any]]], dict[str, Any]]:
    """`kept(what, fresh)`: the kept timing of `what` for this case ('reference' or 'compile'),
    else `fresh()`, kept for the next check (`rung.judge.kept_timings`)."""
    proc = session.solution
    keep = kept_timings.usable([*proc.start.caches, proc.start.scratch])
    settings = kept_timings.settings(policy, flush.l2_bytes)

    def kept(what: str, fresh: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if not keep:
            return fresh()
        k = kept_timings.key(what, session.problem_path, case, input_sets, settings)
        return kept_timings.timing(k, session.run_dir, fresh)

    return kept


def _public(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k not in ("raw_ms", "batches", "snapshots", "harm", "seconds")}


def _baseline(
    session: Session, sets: list[tuple[Any, ...]], policy: Policy, flush: Flusher, trace: Path
) -> dict[str, Any]:
    reference = session.problem.reference

    def eager(*inputs: Any) -> Any:
        return reference(inputs)

    compiled = torch.compile(eager)
    return guarded(lambda: measure(lambda i: compiled(*sets[i % len(sets)]), policy, flush, trace))
