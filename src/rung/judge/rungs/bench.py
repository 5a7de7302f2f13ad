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
from typing import Any

import torch

from rung import knobs
from rung.common.checked_calls import drawn, graph_call
from rung.common.measure import Walls, guarded, measure
from rung.common.shm import TensorSpec
from rung.common.timing import Flusher, Policy
from rung.common.trees import leaves
from rung.judge import kept_timings
from rung.judge.clocks import Reading
from rung.judge.rungs.correct import check_against, judge_outputs, trial_seed
from rung.judge.rungs.outcome import Failed, Skipped
from rung.spec import RungResult, Status
from rung.stats import geomean, ratio, relative_error

GRAPH_BELOW_MS = 0.020
ROTATION_BYTES = 2 * 2**30  # input sets rotated per case: as many as fit in this, 2 to 8
SNAPSHOT_BYTES = 2**30  # output copies of timed calls per case: as many as fit in this, 2 to 4
SETS_APART, SETS_MIN_CALLS, SETS_MIN_US = 0.02, 3, 20.0  # when input sets that read apart are named
IDLE_SHARE, IDLE_MIN_US = 0.05, 2.0  # when a call's idle time between its kernels is named
GRAPH_SLOT_BYTES = 2**28  # a graph pass runs only for calls under GRAPH_BELOW_MS: small outputs
HOT_WARMUP_S = 0.03  # warm-up once the GPU is hot: every timing after the first case's solution


def bench(session: Any, params: dict[str, Any]) -> RungResult:
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
    results, artifacts = [], []
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
    lines = [_line(r) for r in results] + [
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
    session: Any, index: int, case: dict[str, Any], policy: Policy, hot: Policy, flush: Flusher, out_dir: Path
) -> tuple[dict[str, Any], Path]:
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
    many = rotation(first, _free_bytes(), int(knobs.get("RUNG_BENCH_SETS")), specs)
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
        checked = _check_timed(
            session, case, sets, (expected, precise_by_set), sol, (timed_slots, check_key), held_s
        )
        del precise_by_set
        if graph_slot is not None:
            checked += _check_graph(session, case, sets, expected, sol, (slots[graph_slot], check_key))
        _check_content_cache(session, case, sets, placed)
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
    r: dict[str, Any] = {"case": case, "input_sets": len(sets), **_public(sol), "clocks": clocks}
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
        r.update({"flops": cost["flops"], "bytes": cost["bytes"], "math": cost.get("math") or _math(first)})
        r["input_bytes"] = read_bytes(first, specs)
        if cost.get("cost_estimated"):
            r.update(cost_estimated=True, flops_by_op=cost["flops_by_op"])
        seconds = r["median_ms"] / 1e3
        r["achieved_gbps"] = cost["bytes"] / seconds / 1e9
        r["achieved_tflops"] = cost["flops"] / seconds / 1e12
    r["wall_s"] = {**wall.laps, "in_solution_process": sol.get("wall_s", {})}
    return r, trace


def _keeper(
    session: Any, case: dict[str, Any], input_sets: int, policy: Policy, flush: Flusher
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


def _check_timed(
    session: Any,
    case: dict[str, Any],
    sets: list[Any],
    references: tuple[Any, dict[int, Any]],
    sol: dict[str, Any],
    drawn: tuple[list[Any], bytes],
    held_s: float,
) -> int:
    """What the judge checks of a timing it did not watch; Failed naming the first thing wrong.
    The number of timed calls whose output was checked. `drawn`: the slots the outputs were
    copied into, and the key that chose which calls."""
    slots, check_key = drawn
    where = f"benchmark case {case}"
    if "error" in sol:
        raise TimedCallRaised(f"{where}: while timed: {sol['error']}")
    harm = sol.get("harm") or {}
    if harm.get("patched"):
        raise Failed(f"{where}: timing functions replaced while timed: {', '.join(harm['patched'])}")
    if int(sol.get("new_threads", 0)) > 0:
        raise Failed(
            f"{where}: {sol['new_threads']} thread(s) left running after the timed calls: "
            + ", ".join(sol.get("new_thread_names", []))
        )
    if int(sol.get("outside_launches", 0)) > 0:
        raise Failed(
            f"{where}: device work launched outside any timed call "
            f"({sol['outside_launches']} launches: {', '.join(sol.get('outside_names', []))}): work left running "
            "on another thread after the call returned"
        )
    if int(sol.get("late_calls", 0)) > 0:
        raise Failed(
            f"{where}: {sol['late_calls']} timed call(s) still had work running after they returned "
            "(a stream the call never joined back)"
        )
    sampled_ms = float(sol.get("mean_ms", 0)) * int(sol.get("samples", 0))
    if sampled_ms / 1e3 > held_s:
        raise Failed(
            f"{where}: the solution process reported {sampled_ms / 1e3:.3f} s of timed calls within "
            f"{held_s:.3f} s of wall clock: its timer was forged"
        )
    shots = sol.get("snapshots") or []
    if not shots:
        raise Failed(f"{where}: no timed call's output came back to be checked")
    # set 0's reference (the shapes are every set's), and the float64 references made so far.
    # One float64 reference is alive at a time, shots checked set by set: a float64 copy of
    # KernelBench's 6 GiB outputs is 12 GiB, and an 80 GB GPU holds the solution process too.
    expected, precise = references
    if any(not 0 <= int(x["slot"]) < len(slots) for x in shots):
        raise Failed(f"{where}: a timed call's output came back under an unknown slot")
    samples = int(sol.get("samples", 0))
    check_choice(
        where,
        shots,
        check_key,
        len(slots),
        int(sol.get("timed_calls", -1)),
        (samples, int(sol.get("cupti_calls", 0))),
    )
    # call i took input set i % sets: the judge's count, not the solution process's word
    for shot in sorted(shots, key=lambda x: int(x["call"]) % len(sets)):
        k, i = int(shot["slot"]), int(shot["call"])
        s = i % len(sets)
        if not shot.get("copied"):
            raise Failed(
                f"{where}: timed call {i} returned {shot.get('returned')}, not the checked outputs' shape"
            )
        if s not in precise:
            precise.clear()
            precise[s] = session.reference(sets[s], precise=True)
        copied = [v.clone() for v in slots[k]]
        ok, message, _ = judge_outputs(
            session, sets[s], _Copied(copied, expected, session), expected, precise[s], False, ours=s == 0
        )
        del copied  # before the next shot's copy is made
        if not ok:
            under = " under the profiler (the CUPTI pass)" if i >= samples else ""
            raise Failed(
                f"{where}: timed call {i} (input set {s}) gave a wrong answer while timed{under}: {message}",
                {"case": case, "call": i, "set": s},
            )
    return len(shots)


def check_choice(
    where: str,
    shots: list[dict[str, Any]],
    key: bytes,
    slots: int,
    timed_calls: int,
    passes: tuple[int, int],
) -> None:
    """Failed where the timed calls whose outputs came back are not those the judge's key chose
    (`rung.common.checked_calls`), or their count is not the passes' calls (`passes`: the events
    pass's samples and the CUPTI pass's calls): the choice of checked calls was steered in the
    solution's process."""
    if timed_calls != sum(passes):
        raise Failed(
            f"{where}: the solution process counted {timed_calls} timed calls for its checked outputs "
            f"but reported {sum(passes)} timed calls: the choice of checked calls was tampered with"
        )
    held = drawn(key, slots, *passes)
    came = {int(x["slot"]): int(x["call"]) for x in shots}
    for slot, call in sorted(held.items()):
        if came.get(slot) != call:
            raise Failed(
                f"{where}: slot {slot} came back holding timed call {came.get(slot)}, where the judge's "
                f"draw put call {call}: the choice of checked calls was steered in the solution's process"
            )
    if len(came) != len(held):
        raise Failed(f"{where}: {len(came)} checked outputs came back where the judge drew {len(held)}")


def _check_graph(
    session: Any,
    case: dict[str, Any],
    sets: list[Any],
    expected: Any,
    sol: dict[str, Any],
    drawn: tuple[Any, bytes],
) -> int:
    """Failed where the CUDA graph pass gave a figure but the captured call the judge's key drew
    (`checked_calls.graph_call`) did not come back right after the replays: a solution that does
    less work under stream capture. The number of outputs checked (0 or 1)."""
    graph = sol.get("graph") or {}
    if "median_ms" not in graph:
        return 0
    slot, key = drawn
    where = f"benchmark case {case}: the CUDA graph pass"
    shot = graph.get("checked") or {}
    calls = int(graph.get("calls_per_replay", 0))
    if not shot or calls < 1 or int(shot.get("call", -1)) != graph_call(key, calls):
        raise Failed(f"{where} gave a figure, but not the output of the captured call the judge drew")
    j = int(shot["call"])
    if not shot.get("copied"):
        raise Failed(
            f"{where}: captured call {j} returned {shot.get('returned')}, not the checked outputs' shape"
        )
    s = j % len(sets)
    precise = session.reference(sets[s], precise=True)
    copied = [v.clone() for v in slot]
    ok, message, _ = judge_outputs(
        session, sets[s], _Copied(copied, expected, session), expected, precise, False, ours=s == 0
    )
    if not ok:
        raise Failed(
            f"{where}: captured call {j} (input set {s}) gave a wrong answer when replayed: {message} "
            "(a solution that does other work under stream capture)",
            {"case": case, "graph_call": j, "set": s},
        )
    return 1


def _check_content_cache(session: Any, case: dict[str, Any], sets: list[Any], placed: list[Any]) -> None:
    """Failed where a timed input set, changed in one element of each floating input after its
    calls were timed (where it was placed), gives the answer it gave before: the solution keeps
    answers by what its inputs look like (a content cache: the timed sets repeat, so every timed
    call after the first of each set would be a hit, and every checked answer right)."""
    s = secrets.randbelow(len(sets))
    undo = change_one(sets[s])  # in place, undone after: a copy of a 6 GiB set may not fit
    if not undo:
        return
    try:
        session.at = f"benchmark case {case}, input set {s} changed in one element after it was timed"
        session.solution.refill(placed[s], sets[s])
        expected = session.reference(sets[s], precise=False)
        precise = session.reference(sets[s], precise=True)
        called = session.call(sets[s], expected, placed=placed[s])
        ok, message, _ = judge_outputs(session, sets[s], called, expected, precise, ours=True)
    finally:
        restore(undo)
    if not ok:
        raise Failed(
            f"benchmark case {case}: input set {s}, changed in one element of each floating input after "
            f"its calls were timed, gave a wrong answer ({message}): the solution answers from what it "
            "kept of inputs it saw before (a content cache), not from the inputs it is given",
            {"case": case, "set": s},
        )


def change_one(inputs: Any, tries: int = 16) -> list[tuple[torch.Tensor, int, torch.Tensor]]:
    """Change, in place, one element of each floating tensor of `inputs` (at a place the judge
    draws) to the value of another of its elements, so values stay in the inputs' own range; what
    `restore` needs to undo it (empty where no tensor showed two distinct values in `tries` draws)."""
    undo = []
    for t in leaves(inputs):
        if not t.is_floating_point() or t.numel() < 2 or not t.is_contiguous():
            continue
        flat, n = t.view(-1), t.numel()
        i = secrets.randbelow(n)
        j = next((j for j in (secrets.randbelow(n) for _ in range(tries)) if bool(flat[j] != flat[i])), None)
        if j is None:
            continue
        undo.append((flat, i, flat[i].clone()))
        flat[i] = flat[j]
    return undo


def restore(undo: list[tuple[torch.Tensor, int, torch.Tensor]]) -> None:
    for flat, i, old in undo:
        flat[i] = old


def read_bytes(inputs: Any, outputs: list[TensorSpec]) -> int:
    """The bytes of a case's inputs a call must read from DRAM (bench flushes the L2 before it),
    less one input tensor shaped as each output: formats that hand the output buffer in among
    the inputs (GPU MODE) have it written, not read, and its writes may stay in the L2."""
    left = list(outputs)
    total = 0
    for t in leaves(inputs):
        spec = TensorSpec.of(t)
        if spec in left:
            left.remove(spec)
            continue
        total += t.numel() * t.element_size()
    return total


class TimedCallRaised(Exception):
    """The solution raised while being timed: the rung ends ERROR."""


class _Copied:
    """A timed call's copied outputs in the form `judge_outputs` reads."""

    def __init__(self, outs: list[torch.Tensor], expected: Any, session: Any) -> None:
        from rung.common.messages import CallReport, OutputMeta

        self.warn = session.warn if session.lenient else None  # as the session's own calls

        metas = [
            OutputMeta(
                "Tensor", list(o.shape), str(o.dtype).removeprefix("torch."), str(o.device), True, True
            )
            for o in outs
        ]
        self.report = CallReport(
            "tensor" if isinstance(expected, torch.Tensor) else f"tuple of {len(outs)}", metas
        )
        self.outs = outs


def shared_gpu(clocks: list[dict[str, Any]]) -> list[int]:
    """The other processes NVML saw on the GPU while the case was timed (its readings' `others_on_gpu`)."""
    return sorted({p for c in clocks for p in (c.get("others_on_gpu") or {}).get("other_pids", [])})


def snapshots(specs: list[TensorSpec]) -> int:
    """How many timed calls' outputs are copied out per case: as many as fit in SNAPSHOT_BYTES, 2 to
    4 (each input set among them costs the judge a float64 reference: time to a verdict)."""
    size = sum(s.nbytes for s in specs)
    return max(2, min(4, SNAPSHOT_BYTES // max(size, 1)))


def sets_apart(r: dict[str, Any]) -> str:
    """Where a case's input sets read more than SETS_APART apart (each set's median span), that the
    figure depends on where its inputs lie: one process's mix of addresses is not another's, so
    the same kernel can read differently in the next check; '' where they agree or a set's
    median rests on too few calls to say."""
    per_set = r.get("per_set_median_ms") or []
    enough = int(r.get("samples", 0)) >= SETS_MIN_CALLS * len(per_set)
    if len(per_set) < 2 or not enough or r["median_ms"] * 1e3 < SETS_MIN_US:
        return ""
    low, high = min(per_set), max(per_set)
    apart = (high - low) / r["median_ms"]
    if apart <= SETS_APART:
        return ""
    return (
        f"{r['case']}: its {len(per_set)} input sets read {low * 1e3:.1f} to {high * 1e3:.1f} us "
        f"({apart * 100:.1f}% apart): the figure depends on where the inputs lie in memory, and a "
        "check in another process, with other addresses, can read otherwise; the median over all "
        "calls is the figure"
    )


def idle_between_kernels(r: dict[str, Any]) -> str:
    """Where the device sat idle for IDLE_SHARE of a call's span or more (and IDLE_MIN_US), that
    the span holds time the device spent waiting on the host (a launch that came after the last
    kernel ended, a synchronisation), so the figure moves with the host's speed and load from one
    check to the next, and the busy time is the steadier reading of the kernels; '' otherwise."""
    gap_ms, busy_ms, span = r.get("gap_ms"), r.get("busy_ms"), r.get("cupti")
    if gap_ms is None or busy_ms is None or not span:
        return ""
    span_us, gap_us = span["median_ms"] * 1e3, gap_ms * 1e3
    if gap_us < IDLE_MIN_US or gap_us < IDLE_SHARE * span_us:
        return ""
    copies = f" and {r['copies_per_call']} copy/memset" if r.get("copies_per_call") else ""
    return (
        f"{r['case']}: the device sat idle {gap_us:.1f} us of the {span_us:.1f} us span between "
        f"the call's {r.get('kernels_per_call', '?')} kernel(s){copies} (busy {busy_ms * 1e3:.1f} us): the span "
        "includes time the device waited on the host (a late launch, a synchronisation), which "
        "moves with the host's load, so another check can read otherwise; the busy time is the "
        "kernels' steadier figure"
    )


def method(r: dict[str, Any]) -> str:
    """How a case's headline figure was taken, in words: a figure is only comparable with one
    taken the same way (GPU MODE times events around each call, on one input set or fresh ones)."""
    how = "CUDA events around each call, its launch queued behind a spin (the profiler off)"
    inputs = "the same inputs every call" if r["input_sets"] == 1 else f"{r['input_sets']} input sets in turn"
    return f"{how}, median of {r['samples']} calls; L2 flushed before each; {inputs}"


def _public(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k not in ("raw_ms", "batches", "snapshots", "harm", "seconds")}


def _free_bytes() -> int:
    """What the GPU has free now, this process's allocator cache handed back first."""
    torch.cuda.empty_cache()
    return int(torch.cuda.mem_get_info()[0])


def rotation(
    inputs: tuple[Any, ...],
    free_bytes: int | None = None,
    asked: int = 0,
    outputs: list[TensorSpec] | None = None,
) -> int:
    """How many input sets a case rotates through: `asked` (RUNG_BENCH_SETS) where it is set, else
    as many as fit in ROTATION_BYTES, 2 to 8, counting every tensor however nested (GPU MODE's
    inputs are one tuple, output buffer included). Where the device has little free
    (`free_bytes`), fewer, down to the one set already made, by two rules. Each further set lives
    twice on the GPU, the judge's copy and the one placed in the solution process, and half of
    what is free stays free for the calls' own work. And what the case needs whatever the sets
    (`_case_needs`), with the further sets and a later set's float64 reference, must fit in what is
    free: KernelBench's 6 GiB tensors on an 80 GB GPU fit one set, not two."""
    size = max(sum(t.numel() * t.element_size() for t in leaves(inputs)), 1)
    wanted = asked if asked > 0 else max(2, min(8, ROTATION_BYTES // size))
    if free_bytes is None:
        return wanted
    halves = 1 + free_bytes // 2 // (2 * size)
    needs = _case_needs(inputs, outputs or [])
    fits = 1
    while fits < wanted and needs + 2 * fits * size + _float64_inputs(inputs) <= free_bytes:
        fits += 1
    return max(1, min(wanted, halves, fits))


def _case_needs(inputs: tuple[Any, ...], outputs: list[TensorSpec]) -> int:
    """Bytes a case needs on the GPU beyond its input sets, once set 0 is drawn and its references
    are made: the timed calls' output slots, the solution's own output, and the judge's check of
    a timed output (its copy, and the problem's own check running the reference on a copy of the
    inputs)."""
    out = sum(s.nbytes for s in outputs)
    size = sum(t.numel() * t.element_size() for t in leaves(inputs))
    return snapshots(outputs) * out + out + (out + size + out)


def _float64_inputs(inputs: tuple[Any, ...]) -> int:
    """What a later set's float64 reference adds: its floating inputs upcast (the float64 output
    takes the place of set 0's, which the timed checks let go first)."""
    return sum(t.numel() * 8 for t in leaves(inputs) if t.is_floating_point())


def _math(inputs: tuple[Any, ...]) -> str:
    """The ceiling a case's FLOPs run against, from its first floating input's dtype (however
    nested: GPU MODE's inputs are one tuple)."""
    for t in leaves(inputs):
        if t.is_floating_point():
            return {torch.float16: "fp16_tensor", torch.bfloat16: "bf16_tensor"}.get(t.dtype, "fp32_vector")
    return "fp32_vector"


def _baseline(
    session: Any, sets: list[tuple[Any, ...]], policy: Policy, flush: Flusher, trace: Path
) -> dict[str, Any]:
    reference = session.problem.reference

    def eager(*inputs: Any) -> Any:
        return reference(inputs)

    compiled = torch.compile(eager)
    return guarded(lambda: measure(lambda i: compiled(*sets[i % len(sets)]), policy, flush, trace))


def _kept(timing: dict[str, Any]) -> str:
    """Where a figure came from when it was not timed in this check."""
    return f" (timed {timing['kept']['measured_at']})" if "kept" in timing else ""


def _line(r: dict[str, Any]) -> str:
    parts = [
        f"{r['case']}: {r['median_ms'] * 1e3:.1f} us (±{relative_error(r) * 100:.2f}%, n={r['samples']})"
    ]
    if "achieved_gbps" in r:
        estimated = " (estimated cost)" if r.get("cost_estimated") else ""
        parts.append(f"{r['achieved_gbps']:.0f} GB/s {r['achieved_tflops']:.1f} TFLOP/s{estimated}")
    parts.append(
        f"x{r['speedup_vs_reference']:.2f}±{r['speedup_vs_reference_err']:.2f} vs reference{_kept(r['reference'])}"
    )
    if "speedup_vs_compile" in r:
        parts.append(f"x{r['speedup_vs_compile']:.2f} vs torch.compile{_kept(r['compile'])}")
    if "graph" in r and "median_ms" in r["graph"]:
        parts.append(f"graph {r['graph']['median_ms'] * 1e3:.1f} us")
    if r.get("shared_gpu"):
        parts.append(
            f"timed while other processes used the GPU (pids {', '.join(map(str, r['shared_gpu'][:5]))})"
        )
    if r.get("cupti"):
        copies = f" + {r['copies_per_call']} copy/memset" if r.get("copies_per_call") else ""
        parts.append(
            f"{r['kernels_per_call']} kernel(s){copies}, CUPTI span {r['cupti']['median_ms'] * 1e3:.1f} us"
        )
    else:
        parts.append(f"no CUPTI pass: {r.get('cupti_error', '')}")
    return "  " + "; ".join(parts)
