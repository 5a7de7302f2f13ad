"""The optimize loop profiles the versions it chooses, not every candidate.

Nsight Compute replays each kernel of a call many times (seconds a kernel) and proton's scopes
build an instrumented copy of it, so a profile of every candidate would cost most of a round and
tell the agent about versions it drops. Candidates climb with `profile` and `scopes` left out
(beside whatever the person left out); the version the loop builds on, each new best, is then
profiled once by a second climb of just the rungs those two stand on (and compile, so a build
is read from the cache as a compile figure, not redone inside run). That climb is another run
of the same solution (same hash, same parent); the agent is shown its summary beside the best.

That climb is also the new best's witness (issue 39): bench's figure is the candidate process's
claim, and Nsight Compute measures the same case's call in a process of its own. Before a
contender is called the best, its figure for the profiled case is held against ncu's duration
with the judge's bands (`rung.judge.witness`, data-model code only); a figure faster than the
band allows, or a profile climb that fails (its profiled call's answer wrong), contradicts it,
and the next contender, fastest first, is witnessed instead. Where no profile is due (no GPU,
profile left out) or ncu measured nothing, the best is kept and marked unwitnessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rung import knobs, runner, views
from rung.agents import Tried
from rung.judge.witness import compare, message
from rung.ladder import LADDER
from rung.spec import Device, Outcome, Problem, Run, Status
from rung.store import Store

DEFERRED = ("profile", "scopes")


def standing_on(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` and every rung they need, transitively, in ladder order."""
    needs = {spec.name: spec.needs for spec in LADDER}
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(needs[name])
    return tuple(spec.name for spec in LADDER if spec.name in wanted)


@contextmanager
def candidates_deferred() -> Iterator[None]:
    """RUNG_SKIP for the climbs of candidates: the person's, and the deferred rungs."""
    with knobs.scoped(RUNG_SKIP=",".join(sorted(runner.skipped_rungs() | set(DEFERRED)))):
        yield


def wanted(device: Device) -> tuple[str, ...]:
    """The deferred rungs a chosen version gets here: none without a GPU, none the person left
    out, scopes only when asked (RUNG_SCOPES=1)."""
    if device.kind != "cuda":
        return ()
    left_out = runner.skipped_rungs() | (set() if int(knobs.get("RUNG_SCOPES")) else {"scopes"})
    return tuple(n for n in DEFERRED if n not in left_out)


def profile(store: Store, problem: Problem, device: Device, chosen: Run, path: Path) -> Run | None:
    """The profile climb of `chosen`, whose source is at `path`: another run of the same solution;
    None where none is due."""
    rungs = wanted(device)
    if not rungs or not chosen.ok:
        return None
    return runner.climb(
        store, problem, device, path, parent=chosen.solution.parent, only=standing_on(("compile", *rungs))
    )


def witness(best: Run, profiled: Run | None) -> dict[str, Any]:
    """`best`'s bench figure for the case its profile climb `profiled` profiled, against Nsight
    Compute's duration there (`rung.judge.witness.compare`, with `profile_run`); contradicted,
    with a `message`, where that figure is faster than its band allows or the climb failed."""
    if profiled is None:
        return {"verdict": "unwitnessed"}
    seen = {"profile_run": profiled.id}
    if profiled.outcome == Outcome.FAILED:  # its last case is the one profile profiles
        said = f"its profile climb, run {profiled.id}, reads {profiled.verdict}: {profiled.why}"
        cases = views.bench_cases(best)
        last = cases[-1]["case"] if cases else None
        return {"case": last, **seen, "verdict": "contradicted", "message": said}
    rung = profiled.rung("profile")
    if rung is None or rung.status != Status.OK or "witness" not in rung.metrics:
        return {**seen, "verdict": "unwitnessed"}
    case = rung.metrics["witness"].get("case")
    w = {**compare(views.median_ms(best, case), rung.metrics.get("kernels") or [], case), **seen}
    return {**w, "message": message(w)} if w["verdict"] == "contradicted" else w


def crown(
    contenders: list[Tried], speed: Callable[[Tried], float], witnessed: Callable[[Tried], dict[str, Any]]
) -> tuple[tuple[Tried, dict[str, Any]] | None, list[tuple[Tried, dict[str, Any]]]]:
    """The fastest contender (`speed`: lower is faster; ties in the order they came) whose witness
    does not contradict it, with that witness (None where every one's did), and each contender
    before it with the witness that contradicted it. `witnessed` profiles a contender and says
    what its witness found."""
    demoted: list[tuple[Tried, dict[str, Any]]] = []
    for tried in sorted(contenders, key=speed):
        w = witnessed(tried)
        if w["verdict"] != "contradicted":
            return (tried, w), demoted
        demoted.append((tried, w))
    return None, demoted
