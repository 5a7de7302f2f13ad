"""The optimize loop: propose, climb the ladder, keep the best, until a stop rule says enough.

Each round an agent proposes up to `parallel` versions of the best so far; each is written to
`.rung/versions/<problem>/`, stored with its parent, and climbs the whole ladder. A version
counts only if it passes every rung that ran; it replaces the best only if its benchmark time
(geometric mean of the case medians) is lower by more than twice the measured noise. Stop rules:
the roofline target reached, the agent out of proposals, the round budget spent, or a plateau
(`plateau` rounds without a gain). Where nothing can be timed (no GPU), no version can beat
another, so the best stays the first correct one and the loop says so. Without `start`, the
loop resumes from the best stored version of the problem.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung import runner
from rung.agents import Agent
from rung.errors import UsageError
from rung.spec import Run, Status
from rung.stats import geomean
from rung.store import Store

OnEvent = Callable[[dict[str, Any]], None]


@dataclass
class Outcome:
    best: Run
    reason: str
    rounds: int
    candidates: list[Run] = field(default_factory=list)


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


def optimize(
    store: Store,
    problem_dir: Path,
    agent: Agent,
    start: Path | None = None,
    rounds: int = 10,
    parallel: int = 1,
    target: float = 0.9,
    plateau: int = 3,
    on_event: OnEvent | None = None,
) -> Outcome:
    emit = on_event or (lambda event: None)
    problem, device = runner.describe(problem_dir, store.root / "scratch")
    if start is not None:
        best = runner.climb(store, problem, device, start)
        emit({"event": "start", "run": best.id, "verdict": best.verdict})
        if not best.ok:
            return Outcome(best, f"the starting version does not pass ({best.verdict})", 0)
    else:
        passing = [r for r in store.runs(problem.name) if r.ok and r.finished]
        if not passing:
            raise UsageError(
                f"no passing version of {problem.name} in this workspace to resume from: pass --from"
            )
        timed = [r for r in passing if score(r) is not None]
        best = min(timed, key=lambda r: score(r)[0]) if timed else passing[0]  # type: ignore[index]
        emit({"event": "resume", "run": best.id, "path": best.solution.path})
    versions = store.root / "versions" / problem.name
    versions.mkdir(parents=True, exist_ok=True)
    candidates: list[Run] = []
    stale = 0
    for round_no in range(1, rounds + 1):
        pct = roofline_pct(best)
        if pct is not None and pct >= target:
            return Outcome(best, f"at roofline: {pct:.0%} >= {target:.0%}", round_no - 1, candidates)
        proposals = agent.propose(Path(best.solution.path).read_text(), parallel)
        if not proposals:
            return Outcome(best, "the agent has nothing more to propose", round_no - 1, candidates)
        improved = False
        for p in proposals:
            path = versions / f"{hashlib.sha256(p.source.encode()).hexdigest()[:12]}.py"
            path.write_text(p.source)
            run = runner.climb(store, problem, device, path, parent=best.solution.sha256)
            store.add_proposal(run.solution.sha256, agent.name, p.note, p.prompt, p.reply)
            candidates.append(run)
            emit(
                {
                    "event": "candidate",
                    "round": round_no,
                    "run": run.id,
                    "note": p.note,
                    "verdict": run.verdict,
                    "score_ms": (score(run) or (None,))[0],
                }
            )
            if better(run, best):
                best, improved = run, True
        emit({"event": "round", "round": round_no, "best_run": best.id, "improved": improved})
        stale = 0 if improved else stale + 1
        if score(best) is not None and stale >= plateau:
            return Outcome(
                best, f"plateau: no gain above the noise for {plateau} rounds", round_no, candidates
            )
    if score(best) is None:
        return Outcome(
            best,
            f"round budget ({rounds}) spent; nothing could be timed on {device.name}, so the best is the "
            "first correct version",
            rounds,
            candidates,
        )
    return Outcome(best, f"round budget ({rounds}) spent", rounds, candidates)
