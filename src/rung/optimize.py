"""The optimize loop: propose, climb the ladder, keep the best, until a stop rule says enough.

Each round an agent proposes up to `parallel` versions of the best so far; each is written to
`.rung/versions/<problem>/`, stored with its parent, the prompt and reply that produced it, the
tools the agent called on the way, the hints it was shown, its tokens, cost and seconds. With one
candidate a round, it climbs in this process as soon as it arrives. With several, they climb at
once on the executor's workers (one per GPU; on the CPU, one interpreter worker per candidate
unless RUNG_WORKERS says otherwise), the same judges and verdicts as one by one. A version counts
only if it is verified (`Run.ok`: every rung that decides correctness ran and passed); it
replaces the best only if its benchmark time (geometric mean of the case medians) is lower by
more than twice the measured noise, or the best is one this machine could not verify. A proposal
with no solution (a reply without one, a timeout), with the very source of a version already
climbed in this loop, or in another language than the one pinned, is a failed candidate with
the reason. A version the agent already checked in full with its tools is not climbed again.
Candidates climb without the profile and scopes rungs. At the end of a round the versions that
would be the new best are witnessed, fastest first (rung.chosen): each is profiled once, and one
whose bench figure Nsight Compute's own measurement contradicts (or whose profile climb fails) is
not kept, a failure named for the agent, and the next is witnessed instead. The agent sees the
new best's profile beside it; the summary marks the best's figures witnessed or unwitnessed.

A starting version that fails is repaired first: for up to `repair_turns` rounds the agent is
shown it, its failed rung's message and figures, and asked to make it pass; the first passing
version becomes the best and the loop goes on from it.

Stop rules, checked between rounds: the roofline target reached, the agent out of proposals,
the budgets (rounds, wall time, tokens, money), a plateau (`plateau` rounds without a gain),
repair turns spent, or the person (interactive mode: after each round they see the best and may
add a hint, accept or stop). Between rounds the loop also reads the person's hints and pause
marker (rung.steer). Where nothing can be timed (no GPU), no version can beat another, so the
best stays the first correct one and the loop says so. Without `start`, it resumes from the
best stored version.

Every step is an event (a dict with "event"), for a progress display or JSON lines. The loop's
own overhead, a round's wall time less the time spent waiting for the agent and climbing, is
measured and reported.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rung import chosen, executors, knobs, runner
from rung.agents import Agent, LoopState, Proposal, Tried, idioms
from rung.budget import Budget, RoundTimer, Spent, budget_reason
from rung.errors import UsageError
from rung.spare_judges import SpareJudges
from rung.spec import Device, Problem, Run
from rung.spec import Outcome as Verdict
from rung.steer import Steering
from rung.store import Store
from rung.weighing import better, gpu_seconds, resumable, roofline_pct, score

OnEvent = Callable[[dict[str, Any]], None]
PAUSE_POLL_S = 0.5
TAKEN = -1  # a source proposed this round and not climbed yet: its twin is refused too


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
    witnesses: dict[int, dict[str, Any]] = field(default_factory=dict)  # run -> its witness (rung.chosen)


@dataclass
class Rules:
    """How the loop runs and when it stops, besides the budget."""

    parallel: int = 1
    target: float = 0.9
    plateau: int = 3
    repair_turns: int = 3  # rounds to make a failing start pass before giving up
    backend: str = ""  # the kernel language the person pinned; "" for any


def optimize(
    store: Store,
    problem_dir: Path,
    agent: Agent,
    start: Path | Run | None = None,
    budget: Budget | None = None,
    parallel: int = 1,
    target: float = 0.9,
    plateau: int = 3,
    hints: list[str] | None = None,
    on_event: OnEvent | None = None,
    ask: Ask | None = None,
    rules: Rules | None = None,
) -> Outcome:
    """Run the loop on `problem_dir` from `start` (a solution file, a stored run, or None for the
    best stored version); `rules`, where given, replaces parallel, target and plateau."""
    rules = rules or Rules(parallel, target, plateau)
    loop = Loop(store, problem_dir, agent, budget or Budget(), rules, on_event, ask)
    return loop.run(start, hints or [])


def _start(
    store: Store,
    problem: Any,
    device: Any,
    start: Path | Run | None,
    emit: OnEvent,
    spares: SpareJudges | None = None,
) -> Run:
    """The version the loop starts from: a stored run as it is, a file climbed now (by the judge
    `spares` holds for the problem, if any), or the best stored version that finished and passed."""
    if isinstance(start, Run):
        emit({"event": "start", "run": start.id, "path": start.solution.path, "verdict": start.verdict})
        return start
    if start is not None:
        judge = spares.take(Path(problem.path)) if spares is not None else None
        first = runner.climb(store, problem, device, start, judge=judge)
        emit({"event": "start", "run": first.id, "path": str(start), "verdict": first.verdict})
        return first
    passing = [r for r in store.runs(problem.name) if resumable(r)]
    if not passing:
        raise UsageError(
            f"no passing version of {problem.name} in this workspace to resume from: pass --from"
        )
    timed = [r for r in passing if score(r) is not None]
    best = min(timed, key=lambda r: score(r)[0]) if timed else passing[0]  # type: ignore[index]
    emit({"event": "resume", "run": best.id, "path": best.solution.path})
    return best


class Loop:
    """One optimize run: its state between rounds, and the rounds."""

    def __init__(
        self,
        store: Store,
        problem_dir: Path,
        agent: Agent,
        budget: Budget,
        rules: Rules,
        on_event: OnEvent | None,
        ask: Ask | None,
    ) -> None:
        self.store, self.agent, self.budget, self.rules, self.ask = store, agent, budget, rules, ask
        self.emit: OnEvent = on_event or (lambda event: None)
        self.problem: Problem
        self.device: Device
        # Judges started while the loop waits on the agent, each adopted by the next climb.
        self.spares = SpareJudges(store.root / "scratch")
        self.problem, self.device, judge = runner.describe_keeping(problem_dir, store.root / "scratch")
        self.spares.keep(Path(self.problem.path), judge)
        self.steering = Steering(store.root.parent, self.problem.name)
        self.began = time.monotonic()
        self.stale = 0  # rounds in a row without a gain
        self.improved = False  # whether the round in progress found a better version
        self.contenders: list[Tried] = []  # this round's versions that would be the best, unwitnessed yet
        self.climbed: dict[str, int] = {}  # source hash -> run: no source climbs twice

    def run(self, start: Path | Run | None, hints: list[str]) -> Outcome:
        try:
            return self._run(start, hints)
        finally:
            self.spares.close()

    def _run(self, start: Path | Run | None, hints: list[str]) -> Outcome:
        first = _start(self.store, self.problem, self.device, start, self.emit, self.spares)
        self.state = LoopState(
            self.problem,
            self.device,
            Tried(first, self.store.source(first.solution.sha256)),
            hints=list(hints),
            backend=self.rules.backend,
            workspace=self.store.root.parent,
        )
        self.state.versions.mkdir(parents=True, exist_ok=True)
        self.outcome = Outcome(first, "", 0)
        self.climbed[first.solution.sha256] = first.id
        self._take_hints()
        # Only a failing start is repaired: one this machine cannot verify (a CUDA kernel with no
        # GPU) is not wrong, and stays the best until a verified version replaces it.
        reason = self._begin_repair() if first.outcome == Verdict.FAILED else ""
        while not reason:
            reason = self._stop_reason() or self._round()
        return self._finish(reason)

    def _begin_repair(self) -> str:
        """'' when the failing start is to be repaired; the reason to stop where it is not."""
        if self.rules.repair_turns < 1:
            return f"the starting version does not pass ({self.state.best.run.verdict})"
        self.state.repairing = True
        self.emit(
            {"event": "repairing", "run": self.state.best.run.id, "verdict": self.state.best.run.verdict}
        )
        return ""

    def _stop_reason(self) -> str:
        """Why the loop ends before the next round ('' to go on), after a pause the person asked."""
        self._hold_while_paused()
        self._take_hints()
        spent = self.outcome.spent
        spent.wall_s = time.monotonic() - self.began - spent.paused_s
        if self.state.repairing and spent.rounds >= self.rules.repair_turns:
            return f"the starting version still fails after {self.rules.repair_turns} repair round(s)"
        pct = roofline_pct(self.state.best.run)
        if pct is not None and pct >= self.rules.target:
            return f"at roofline: {pct:.0%} >= {self.rules.target:.0%}"
        return budget_reason(self.budget, spent)

    def _hold_while_paused(self) -> None:
        if not self.steering.paused:
            return
        held = time.monotonic()
        self.emit({"event": "paused", "round": self.outcome.spent.rounds})
        while self.steering.paused:
            time.sleep(PAUSE_POLL_S)
        self.outcome.spent.paused_s += time.monotonic() - held
        self.emit({"event": "resumed", "paused_s": round(time.monotonic() - held, 1)})

    def _take_hints(self) -> None:
        for hint in self.steering.new_hints():
            self._hint(hint, "rung hint")

    def _hint(self, hint: str, source: str) -> None:
        self.state.hints.append(hint)
        self.emit({"event": "hint", "round": self.outcome.spent.rounds + 1, "hint": hint, "from": source})

    def _round(self) -> str:
        """One round: proposals climbed and weighed; the reason to stop after it, or ''."""
        self.state.round = self.outcome.spent.rounds + 1
        self._emit_round_start()
        began = time.monotonic()
        timer = RoundTimer()
        at_once = self.rules.parallel > 1
        if not at_once:
            self._spare_ready()
        proposed = self._propose_and_climb(timer, at_once)
        if proposed == 0:
            return "the agent has nothing more to propose"
        return self._end_round(began, timer)

    def _emit_round_start(self) -> None:
        self.emit(
            {
                "event": "round_start",
                "round": self.state.round,
                "in_flight": self.rules.parallel,
                "best_run": self.state.best.run.id,
                "best_ms": (score(self.state.best.run) or (None,))[0],
                "left": self.outcome.spent.left(self.budget),
                **({"repairing": True} if self.state.repairing else {}),
            }
        )

    def _propose_and_climb(self, timer: RoundTimer, at_once: bool) -> int:
        """Each proposal vetted as it arrives; climbed at once, or then and there; the count."""
        waiting: list[Proposal] = []
        proposed = 0
        for p in timer.waiting(iter(self.agent.propose(self.state, self.rules.parallel))):
            proposed += 1
            self._vet(p)
            if p.error:
                self._record(p, None)
            elif at_once and p.checked is None:
                waiting.append(p)
            else:
                with timer.climbing(), chosen.candidates_deferred():
                    self._record(p, self._climb_one(p))
                self._spare_ready()
        if waiting:
            with timer.climbing(), chosen.candidates_deferred():
                for p, run in zip(waiting, self._climb_at_once(waiting), strict=True):
                    self._record(p, run)
        return proposed

    def _vet(self, p: Proposal) -> None:
        """Count what the proposal cost; give it an error where it must not climb."""
        self.outcome.spent.tokens += p.tokens_in + p.tokens_out
        self.outcome.spent.usd += p.cost_usd or 0.0
        if p.error:
            return
        sha = _sha(p.source)
        if self.climbed.get(sha) == TAKEN:
            p.error = "the same source as another proposal of this round"
        elif sha in self.climbed:
            p.error = f"the same source as run {self.climbed[sha]}, which already climbed the ladder"
        elif self.rules.backend and idioms.written_in(p.source) not in ("", self.rules.backend):
            p.error = f"written in {idioms.written_in(p.source)}, but the person pinned {self.rules.backend}"
        else:
            self.climbed[sha] = TAKEN
            self.emit({"event": "climbing", "round": self.state.round, "note": p.note})

    def _climb_one(self, p: Proposal) -> Run:
        """The version's run: the agent's own full check of it, else a climb here."""
        if p.checked is not None:
            return self.store.run(p.checked)
        path = self._write(p)
        judge = self.spares.take(Path(self.problem.path))
        return runner.climb(
            self.store,
            self.problem,
            self.device,
            path,
            parent=self.state.best.run.solution.sha256,
            judge=judge,
        )

    def _spare_ready(self) -> None:
        """A judge for the next candidate, starting up while the agent thinks (under the
        candidates' settings, which its environment must match to be adopted)."""
        with chosen.candidates_deferred():
            self.spares.ready(Path(self.problem.path))

    def _climb_at_once(self, proposals: list[Proposal]) -> list[Run]:
        """The versions climbed together on the executor's workers (RUNG_EXECUTOR, RUNG_WORKERS)."""
        workers = int(knobs.get("RUNG_WORKERS")) or (None if self.device.kind == "cuda" else len(proposals))
        executor = executors.from_spec(str(knobs.get("RUNG_EXECUTOR")), workers)
        paths = [self._write(p) for p in proposals]
        return executors.check_batch(
            self.store, executor, Path(self.problem.path), paths, parent=self.state.best.run.solution.sha256
        )

    def _write(self, p: Proposal) -> Path:
        return self._write_source(p.source)

    def _write_source(self, source: str) -> Path:
        """The version's file under its content hash."""
        path = self.state.versions / f"{_sha(source)[:12]}.py"
        path.write_text(source)
        return path

    def _record(self, p: Proposal, run: Run | None) -> None:
        """Store the proposal with the run it led to, and weigh that run against the best."""
        ladder_s = (run.finished or 0.0) - run.started if run else 0.0
        self.store.add_proposal(
            self.agent.name, p, self.state.round, run, ladder_s, gpu_seconds(run) if run else 0.0
        )
        for call in p.tool_calls:
            self.emit({"event": "tool", "round": self.state.round, **call.to_dict()})
        if run is None:
            self.state.failures.append(p.error)
            self.outcome.failures.append(p.error)
            self.emit({"event": "no_version", "round": self.state.round, "note": p.note, "error": p.error})
            return
        self.climbed[run.solution.sha256] = run.id
        tried = Tried(run, p.source)
        self.state.tried.append(tried)
        self.outcome.candidates.append(run)
        self.emit(
            {
                "event": "candidate",
                "round": self.state.round,
                "run": run.id,
                "note": p.note,
                "verdict": run.verdict,
                "score_ms": (score(run) or (None,))[0],
                "tokens": p.tokens_in + p.tokens_out,
                "cost_usd": p.cost_usd,
                "agent_s": round(p.agent_s, 3),
                "ladder_s": round(ladder_s, 3),
                "tool_calls": len(p.tool_calls),
            }
        )
        self._weigh(tried)

    def _weigh(self, tried: Tried) -> None:
        """A verified version better than the best, or replacing one this machine could not verify
        (whatever its time; while repairing, any that passes), contends for the best."""
        best = self.state.best.run
        if tried.run.ok and (not best.ok or better(tried.run, best)):
            self.contenders.append(tried)

    def _end_round(self, began: float, timer: RoundTimer) -> str:
        spent = self.outcome.spent
        spent.rounds += 1
        with timer.climbing():
            self._crown()
        round_s = time.monotonic() - began
        overhead = max(0.0, round_s - timer.waited - timer.climbed)
        spent.overhead_s += overhead
        self.emit(
            {
                "event": "round",
                "round": self.state.round,
                "best_run": self.state.best.run.id,
                "improved": self.improved,
                "round_s": round(round_s, 3),
                "overhead_s": round(overhead, 4),
            }
        )
        self.stale = 0 if self.improved else self.stale + 1
        self.improved = False
        if score(self.state.best.run) is not None and self.stale >= self.rules.plateau:
            return f"plateau: no gain above the noise for {self.rules.plateau} rounds"
        return self._ask_person()

    def _crown(self) -> None:
        """The round's contenders witnessed, fastest first: the first its witness does not
        contradict becomes the best; those before it are not kept, each named as a failure."""
        crowned, demoted = chosen.crown(self.contenders, _speed, self._witnessed)
        self.contenders = []
        for tried, w in demoted:
            said = f"run {tried.run.id}: not kept as the best: {w['message']}"
            self.state.failures.append(said)
            self.emit({"event": "contradicted", "round": self.state.round, "run": tried.run.id, **w})
        if crowned is None:
            return
        self.state.best, self.improved = crowned[0], True
        if self.state.repairing:
            self.state.repairing = False
            self.emit({"event": "repaired", "round": self.state.round, "run": crowned[0].run.id})
        if crowned[0].profile is not None:
            witnessed = {"witness": crowned[1]["verdict"]}
            profiled = {"run": crowned[0].run.id, "profile_run": crowned[0].profile.id, **witnessed}
            self.emit({"event": "profiled", "round": self.state.round, **profiled})

    def _witnessed(self, tried: Tried) -> dict[str, Any]:
        """A contender's profile climb (rung.chosen), for the agent's next round, and its witness."""
        path = self._write_source(tried.source)
        tried.profile = chosen.profile(self.store, self.problem, self.device, tried.run, path)
        w = chosen.witness(tried.run, tried.profile)
        self.outcome.witnesses[tried.run.id] = w
        return w

    def _ask_person(self) -> str:
        """Interactive mode: the person's word after a round; the reason to stop, or ''."""
        if self.ask is None:
            return ""
        ranked = sorted(
            (r for r in self.outcome.candidates if r.ok), key=lambda r: (score(r) or (float("inf"),))[0]
        )
        said = self.ask(self.state.best.run, ranked[:3])
        if said.action in ("accept", "stop"):
            return "accepted by the person" if said.action == "accept" else "stopped by the person"
        if said.hint:
            self._hint(said.hint, "interactive")
        return ""

    def _finish(self, reason: str) -> Outcome:
        outcome = self.outcome
        outcome.best, outcome.rounds = self.state.best.run, outcome.spent.rounds
        outcome.spent.wall_s = time.monotonic() - self.began - outcome.spent.paused_s
        if reason == f"round budget ({self.budget.rounds}) spent" and score(outcome.best) is None:
            reason += (
                f"; nothing could be timed on {self.device.name}, so the best is the first correct version"
            )
        outcome.reason = reason
        return outcome


def _speed(tried: Tried) -> float:
    """A version's time for ranking contenders: its score, untimed ones last."""
    return (score(tried.run) or (float("inf"),))[0]


def _sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()
