"""The optimize loop: propose, climb the ladder, keep the best, until a stop rule says enough.

Each round an agent proposes up to `parallel` versions of the best so far; each is written to
`.rung/versions/<problem>/`, stored with its parent, the prompt and reply that produced it, its
tokens and cost, and climbs the whole ladder as soon as it arrives (an LLM's other replies are
still being written meanwhile). Climbs run one at a time: a GPU shared by two timings times
neither. A version counts only if it passes every rung that ran; it replaces the best only if
its benchmark time (geometric mean of the case medians) is lower by more than twice the measured
noise. A proposal with no solution (a reply without one, a timeout), or with the very source of a
version already climbed in this loop, is a failed candidate with the reason.

Stop rules, checked between rounds: the roofline target reached, the agent out of proposals,
the budgets (rounds, wall time, tokens, money), a plateau (`plateau` rounds without a gain), or
the person (interactive mode: after each round they see the best and may add a hint, accept or
stop). Where nothing can be timed (no GPU), no version can beat another, so the best stays the
first correct one and the loop says so. Without `start`, it resumes from the best stored version.

Every step is an event (a dict with "event"), for a progress display or JSON lines. The loop's
own overhead, a round's wall time less the time spent waiting for the agent and climbing, is
measured and reported.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung import runner
from rung.agents import Agent, LoopState, Proposal, Tried
from rung.errors import UsageError
from rung.spec import Run, Status
from rung.stats import geomean
from rung.store import Store

OnEvent = Callable[[dict[str, Any]], None]


@dataclass
class Budget:
    rounds: int = 10
    wall_s: float | None = None
    tokens: int | None = None
    usd: float | None = None


@dataclass
class Spent:
    rounds: int = 0
    wall_s: float = 0.0
    tokens: int = 0
    usd: float = 0.0
    overhead_s: float = 0.0  # the loop's own time: rounds less agent waits and climbs

    def left(self, budget: Budget) -> dict[str, Any]:
        left: dict[str, Any] = {"rounds": budget.rounds - self.rounds}
        if budget.wall_s is not None:
            left["wall_s"] = round(budget.wall_s - self.wall_s, 1)
        if budget.tokens is not None:
            left["tokens"] = budget.tokens - self.tokens
        if budget.usd is not None:
            left["usd"] = round(budget.usd - self.usd, 4)
        return left


@dataclass
class Guidance:
    """The person's answer after a round: go on (with a hint, maybe), accept the best, or stop."""

    action: str = "continue"  # "continue", "accept" or "stop"
    hint: str = ""


# Interactive mode: shown the round's best and top candidates, the person answers.
Ask = Callable[[Run, list[Run]], Guidance]


@dataclass
class Outcome:
    best: Run
    reason: str
    rounds: int
    candidates: list[Run] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # proposals that gave no version, and why
    spent: Spent = field(default_factory=Spent)


def score(run: Run) -> tuple[float, float] | None:
    """(geometric-mean median in ms, relative noise) of a passing, timed run; None otherwise."""
    bench = next((r for r in run.rungs if r.name == "bench"), None)
    if not run.ok or bench is None or bench.status != Status.OK:
        return None
    cases = bench.metrics.get("cases", [])
    return geomean([c["median_ms"] for c in cases]), max((c.get("rel_sem", 0.0) for c in cases), default=0.0)


def roofline_pct(run: Run) -> float | None:
    roof = next((r for r in run.rungs if r.name == "roofline"), None)
    return roof.metrics.get("min_pct_of_roofline") if roof and roof.status == Status.OK else None


def better(new: Run, best: Run) -> bool:
    a, b = score(new), score(best)
    if a is None or b is None:
        return False
    return a[0] < b[0] * (1 - 2 * max(a[1], b[1]))


def gpu_seconds(run: Run) -> float:
    """Seconds of the rungs that ran in a judge on a GPU (none on a CPU-only machine)."""
    if run.device.kind != "cuda":
        return 0.0
    return sum(r.seconds for r in run.rungs if r.name not in ("compile", "roofline", "dump"))


def _budget_reason(budget: Budget, spent: Spent) -> str:
    if spent.rounds >= budget.rounds:
        return f"round budget ({budget.rounds}) spent"
    if budget.wall_s is not None and spent.wall_s >= budget.wall_s:
        return f"time budget ({budget.wall_s:g} s) spent: {spent.wall_s:.0f} s"
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        return f"token budget ({budget.tokens}) spent: {spent.tokens} tokens"
    if budget.usd is not None and spent.usd >= budget.usd:
        return f"money budget (${budget.usd:g}) spent: ${spent.usd:.2f}"
    return ""


def resumable(run: Run) -> bool:
    """A stored run to resume from: one that finished and passed. Not one killed halfway or still
    climbing (no `finished`), nor one a person stopped (an INTERRUPTED rung: never PASS)."""
    return run.finished is not None and run.verdict == "PASS"


def _start(store: Store, problem: Any, device: Any, start: Path | None, emit: OnEvent) -> Run:
    if start is not None:
        best = runner.climb(store, problem, device, start)
        emit({"event": "start", "run": best.id, "path": str(start), "verdict": best.verdict})
        return best
    passing = [r for r in store.runs(problem.name) if resumable(r)]
    if not passing:
        raise UsageError(
            f"no passing version of {problem.name} in this workspace to resume from: pass --from"
        )
    timed = [r for r in passing if score(r) is not None]
    best = min(timed, key=lambda r: score(r)[0]) if timed else passing[0]  # type: ignore[index]
    emit({"event": "resume", "run": best.id, "path": best.solution.path})
    return best


def optimize(
    store: Store,
    problem_dir: Path,
    agent: Agent,
    start: Path | None = None,
    budget: Budget | None = None,
    parallel: int = 1,
    target: float = 0.9,
    plateau: int = 3,
    hints: list[str] | None = None,
    on_event: OnEvent | None = None,
    ask: Ask | None = None,
) -> Outcome:
    budget = budget or Budget()
    emit = on_event or (lambda event: None)
    began = time.monotonic()
    problem, device = runner.describe(problem_dir, store.root / "scratch")
    best_run = _start(store, problem, device, start, emit)
    state = LoopState(
        problem, device, Tried(best_run, Path(best_run.solution.path).read_text()), hints=list(hints or [])
    )
    outcome = Outcome(best_run, "", 0)
    if not best_run.ok:
        outcome.reason = f"the starting version does not pass ({best_run.verdict})"
        return outcome
    versions = store.root / "versions" / problem.name
    versions.mkdir(parents=True, exist_ok=True)
    stale = 0
    climbed_runs = {best_run.solution.sha256: best_run.id}  # source hash -> run: none climbs twice
    while True:
        outcome.spent.wall_s = time.monotonic() - began
        pct = roofline_pct(state.best.run)
        reason = (
            f"at roofline: {pct:.0%} >= {target:.0%}" if pct is not None and pct >= target else ""
        ) or _budget_reason(budget, outcome.spent)
        if reason:
            break
        state.round = outcome.spent.rounds + 1
        emit(
            {
                "event": "round_start",
                "round": state.round,
                "in_flight": parallel,
                "best_run": state.best.run.id,
                "best_ms": (score(state.best.run) or (None,))[0],
                "left": outcome.spent.left(budget),
            }
        )
        round_began = time.monotonic()
        waited, climbed, improved, proposed = 0.0, 0.0, False, 0
        proposals: Iterator[Proposal] = iter(agent.propose(state, parallel))
        while True:
            t = time.monotonic()
            p = next(proposals, None)
            waited += time.monotonic() - t
            if p is None:
                break
            proposed += 1
            outcome.spent.tokens += p.tokens_in + p.tokens_out
            outcome.spent.usd += p.cost_usd or 0.0
            sha = hashlib.sha256(p.source.encode()).hexdigest()
            if p.source and sha in climbed_runs:
                p.error = f"the same source as run {climbed_runs[sha]}, which already climbed the ladder"
            if not p.error:
                emit({"event": "climbing", "round": state.round, "note": p.note})
            t = time.monotonic()
            run = None if p.error else _climb_version(store, problem, device, versions, p, state.best.run)
            climbed += time.monotonic() - t
            if run is not None:
                climbed_runs[sha] = run.id
            ladder_s = (run.finished or 0.0) - run.started if run else 0.0
            store.add_proposal(agent.name, p, state.round, run, ladder_s, gpu_seconds(run) if run else 0.0)
            if run is None:
                state.failures.append(p.error)
                outcome.failures.append(p.error)
                emit({"event": "no_version", "round": state.round, "note": p.note, "error": p.error})
                continue
            tried = Tried(run, p.source)
            state.tried.append(tried)
            outcome.candidates.append(run)
            emit(
                {
                    "event": "candidate",
                    "round": state.round,
                    "run": run.id,
                    "note": p.note,
                    "verdict": run.verdict,
                    "score_ms": (score(run) or (None,))[0],
                    "tokens": p.tokens_in + p.tokens_out,
                    "cost_usd": p.cost_usd,
                }
            )
            if better(run, state.best.run):
                state.best, improved = tried, True
        if proposed == 0:
            reason = "the agent has nothing more to propose"
            break
        outcome.spent.rounds += 1
        round_s = time.monotonic() - round_began
        overhead = max(0.0, round_s - waited - climbed)
        outcome.spent.overhead_s += overhead
        emit(
            {
                "event": "round",
                "round": state.round,
                "best_run": state.best.run.id,
                "improved": improved,
                "round_s": round(round_s, 3),
                "overhead_s": round(overhead, 4),
            }
        )
        stale = 0 if improved else stale + 1
        if score(state.best.run) is not None and stale >= plateau:
            reason = f"plateau: no gain above the noise for {plateau} rounds"
            break
        if ask is not None:
            ranked = sorted(
                (r for r in outcome.candidates if r.ok), key=lambda r: (score(r) or (float("inf"),))[0]
            )
            said = ask(state.best.run, ranked[:3])
            if said.action in ("accept", "stop"):
                reason = "accepted by the person" if said.action == "accept" else "stopped by the person"
                break
            if said.hint:
                state.hints.append(said.hint)
                emit({"event": "hint", "round": state.round, "hint": said.hint})
    outcome.best, outcome.rounds = state.best.run, outcome.spent.rounds
    outcome.spent.wall_s = time.monotonic() - began
    if reason == f"round budget ({budget.rounds}) spent" and score(outcome.best) is None:
        reason += f"; nothing could be timed on {device.name}, so the best is the first correct version"
    outcome.reason = reason
    return outcome


def _climb_version(store: Store, problem: Any, device: Any, versions: Path, p: Proposal, parent: Run) -> Run:
    """Write the proposal under its content hash and climb the whole ladder on it."""
    path = versions / f"{hashlib.sha256(p.source.encode()).hexdigest()[:12]}.py"
    path.write_text(p.source)
    return runner.climb(store, problem, device, path, parent=parent.solution.sha256)
