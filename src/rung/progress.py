"""What `rung check` shows while it climbs and when it ends.

On a terminal, a live line under the rung lines already printed: which solution of how many, the
rung running, the case it is at (from the run's `progress.jsonl`, where the judge appends a line
per case of correct, scale and bench), its elapsed time and how long until its time limit ends
it (a hang counts down to its TIMEOUT). Piped, nothing live is drawn: scripts and agents read plain lines. Every check
ends with one summary line, as pytest's does: passed, failed, errors, skipped, wall time, and
where the time went (outside the runs, their start, their rungs, the tool rungs, the rest).
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import Progress, ProgressColumn, SpinnerColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

from rung import knobs
from rung.ladder import LADDER
from rung.spec import Outcome, Run, Status

OUTCOMES = ("passed", "failed", "errors", "skipped")


def outcome(run: Run) -> str:
    """The summary's word for a run: passed (verified), failed (a rung FAILED: wrong or broke a
    rule), errors (the solution raised, crashed or hung; a run interrupted or left unfinished),
    skipped (nothing failed, but it was not checked against the reference here, e.g. a CUDA
    kernel on a machine with no GPU: unverified, as pytest counts a skip)."""
    if run.ok:
        return "passed"
    first = next((r for r in run.rungs if r.status.bad), None)
    if first is not None:
        return "failed" if first.status == Status.FAILED else "errors"
    return "skipped" if run.finished else "errors"


@dataclass(frozen=True)
class Expectations:
    """How a check's wrong versions met their problem's expected.yml (rung.expectations): the
    runs that failed as they must (`xfailed`), and for each that did not, how (`missed`)."""

    xfailed: frozenset[int] = frozenset()
    missed: dict[int, str] = field(default_factory=dict)

    def failing(self, runs: list[Run]) -> bool:
        """Whether the check fails: a version failed that was not expected to, or one missed."""
        return bool(self.missed) or any(
            r.outcome == Outcome.FAILED and r.id not in self.xfailed for r in runs
        )


def summary(runs: list[Run], wall_s: float, seen: Expectations | None = None) -> dict[str, Any]:
    """The counts, the check's wall time and, where its parts add up to it, `time_to_verdict`."""
    seen = seen or Expectations()
    counts = Counter(outcome(r) for r in runs if r.id not in seen.xfailed)
    split = check_time(runs, wall_s)
    return {
        **{word: counts[word] for word in OUTCOMES},
        "xfailed": len(seen.xfailed),
        "wall_s": round(wall_s, 3),
        **({"time_to_verdict": split} if split else {}),
    }


def check_time(runs: list[Run], wall_s: float) -> dict[str, float] | None:
    """A check's wall time split: `outside_runs_s`, the check's own time outside its runs (mostly
    describing the problem: a judge starting, importing torch, loading the problem, measuring
    the GPU's ceilings where none are cached), and the parts of its runs' times to verdict summed
    (`Run.time_to_verdict`). None where they cannot add up to the wall: runs that climbed at once
    (on workers, overlapping), one whose parts are not all known, no run."""
    parts = [r.time_to_verdict for r in runs]
    known = [(p.wall_s, p.start_s, p.other_s) for p in parts]
    if not runs or any(None in k for k in known) or _overlapped(runs):
        return None
    wall = round(wall_s, 3)
    return {
        "wall_s": wall,
        "outside_runs_s": round(wall - sum(p.wall_s or 0.0 for p in parts), 3),
        "start_s": round(sum(p.start_s or 0.0 for p in parts), 3),
        "rungs_s": round(sum(p.rungs_s for p in parts), 3),
        "profile_s": round(sum(p.profile_s for p in parts), 3),
        "other_s": round(sum(p.other_s or 0.0 for p in parts), 3),
    }


def _overlapped(runs: list[Run]) -> bool:
    """Whether a run began before another ended (candidates climbing at once on workers)."""
    by_start = sorted(runs, key=lambda r: r.started)
    return any(b.started < (a.finished or math.inf) for a, b in itertools.pairwise(by_start))


def time_words(split: dict[str, Any]) -> str:
    """'12.3s: start 3.1, rungs 7.0, profile 2.2, other 0.0': a time to verdict's wall and its
    parts (`time_to_verdict` or `check_time`), those not known left out ('unfinished' for a wall
    not known)."""
    wall = split.get("wall_s")
    parts = ", ".join(
        f"{key.removesuffix('_s').replace('_', ' ')} {s:.1f}"
        for key, s in split.items()
        if key != "wall_s" and s is not None
    )
    return f"{'unfinished' if wall is None else f'{wall:.1f}s'}: {parts}"


def summary_line(runs: list[Run], wall_s: float, seen: Expectations | None = None) -> Text:
    seen = seen or Expectations()
    counts = summary(runs, wall_s, seen)
    colour = "red" if seen.failing(runs) else "green"
    words = ", ".join(f"{counts[w]} {'error' if w == 'errors' and counts[w] == 1 else w}" for w in OUTCOMES)
    if counts["xfailed"]:
        words += f", {counts['xfailed']} xfailed"
    split = counts.get("time_to_verdict")
    took = time_words(split) if split else f"{wall_s:.1f}s"
    return Text(f"== {words} in {took} ==", style=f"bold {colour}")


def recap(runs: list[Run], seen: Expectations | None = None) -> list[Text]:
    """pytest -ra's short summary: after a check of several versions, one line for each that is
    not verified, in order, with its verdict (where), its run (its record) and why; a wrong
    version that failed as expected.yml says is left out, one that missed it is in, saying how."""
    seen = seen or Expectations()
    if len(runs) < 2:
        return []
    lines = []
    for run in runs:
        if (run.ok or run.id in seen.xfailed) and run.id not in seen.missed:
            continue
        colour = "yellow" if outcome(run) == "skipped" else "red"
        line = Text("  ")
        line.append(run.verdict, style=f"bold {colour}")
        line.append(f"  {run.solution.path}  (run {run.id})", style="bold")
        why = "; ".join(w for w in (run.why, seen.missed.get(run.id, "")) if w)
        if why:
            line.append(f": {why}")
        lines.append(line)
    return lines


def time_limit_s(rung: str) -> float:
    """How long the rung may run before it is a TIMEOUT: RUNG_TIMEOUT_S, else its own limit."""
    spec = next(s for s in LADDER if s.name == rung)
    return float(knobs.get("RUNG_TIMEOUT_S")) or spec.timeout_s


class _Countdown(ProgressColumn):
    def render(self, task: Task) -> Text:
        limit = task.fields.get("limit_s")
        if not limit or task.elapsed is None:
            return Text("")
        left = max(0.0, limit - task.elapsed)
        return Text(f"times out in {int(left) // 60}m{int(left) % 60:02d}s", style="dim")


class _Case(ProgressColumn):
    """The last case the judge finished of the running rung, read again only when the file grows."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: tuple[Path, int, str] | None = None  # the file, its size and the rung read
        self.said = ""

    def render(self, task: Task) -> Text:
        path: Path | None = task.fields.get("progress_file")
        rung: str = task.fields.get("rung", "")
        try:
            key = (path, path.stat().st_size, rung) if path else None
        except OSError:
            return Text("")
        if key is None:
            return Text("")
        if key != self.seen:
            self.seen, self.said = key, _last_case(key[0], rung)
        return Text(self.said, style="cyan")


def _last_case(path: Path, rung: str) -> str:
    for line in reversed(path.read_text(errors="replace").splitlines()):
        try:
            case = json.loads(line)
        except ValueError:
            continue  # a line the judge is still writing
        return f"case {case['done']}/{case['total']} {case['case']}" if case.get("rung") == rung else ""
    return ""


class Climbing:
    """The live line of one `rung check` over `solutions`; a no-op where `console` is no terminal."""

    def __init__(self, console: Console, solutions: list[Path], runs_dir: Path) -> None:
        self.solutions = solutions
        self.runs_dir = runs_dir  # the store's runs/: each run's progress.jsonl
        self.run_id: int | None = None
        self.done = 0
        self.started = time.monotonic()
        self.live = console.is_terminal
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            _Case(),
            TimeElapsedColumn(),
            _Countdown(),
            console=console,
            transient=True,
        )
        self.task = self.bar.add_task("", total=None)

    def __enter__(self) -> Climbing:
        if self.live:
            self.bar.start()
        self._show(LADDER[0].name)  # the problem is read first, in the time shown for load
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live:
            self.bar.stop()

    def rung_done(self, run_id: int, rung: str) -> None:
        """`rung` of run `run_id` ended: the next one in the ladder starts."""
        self.run_id = run_id
        names = [s.name for s in LADDER]
        following = names.index(rung) + 1
        self._show(names[following] if following < len(names) else "")

    def run_done(self) -> None:
        self.done, self.run_id = self.done + 1, None
        if self.done < len(self.solutions):
            self._show(LADDER[0].name)

    def _show(self, rung: str) -> None:
        """The line for `rung` of the current solution ('': its last rung ended, the run is stored)."""
        if not self.live:
            return
        self.bar.remove_task(self.task)
        where = f"[{self.done + 1}/{len(self.solutions)}] {self.solutions[self.done]}"
        limit = time_limit_s(rung) if rung else None
        cases = self.runs_dir / str(self.run_id) / "progress.jsonl" if self.run_id else None
        self.task = self.bar.add_task(
            f"{where}  {rung or 'storing the run'}", total=None, limit_s=limit, progress_file=cases, rung=rung
        )

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


class ClimbingAtOnce:
    """The live line of a check whose candidates climb at once (an executor): how many are
    checked, and the rung each running one is at; a no-op where `console` is no terminal."""

    def __init__(self, console: Console, solutions: list[Path]) -> None:
        self.total = len(solutions)
        self.done = 0
        self.at: dict[int, str] = {}  # run id -> 'name: rung running'
        self.started = time.monotonic()
        self.live = console.is_terminal
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = self.bar.add_task(self._line(), total=None)

    def __enter__(self) -> ClimbingAtOnce:
        if self.live:
            self.bar.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live:
            self.bar.stop()

    def rung_done(self, run: Run, rung: str) -> None:
        names = [s.name for s in LADDER]
        following = names.index(rung) + 1 if rung in names else len(names)
        upcoming = names[following] if following < len(names) else "storing the run"
        self.at[run.id] = f"{Path(run.solution.path).name}: {upcoming}"
        self.bar.update(self.task, description=self._line())

    def run_done(self, run: Run) -> None:
        self.done += 1
        self.at.pop(run.id, None)
        self.bar.update(self.task, description=self._line())

    def _line(self) -> str:
        return f"[{self.done}/{self.total} checked]  " + ", ".join(self.at.values())

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


@contextmanager
def waiting(console: Console, what: str) -> Iterator[None]:
    """A spinner with the elapsed time while a judge answers (a problem read, a GPU measured), on
    a terminal; elsewhere `what` once, as a dim line."""
    if not console.is_terminal:
        console.print(what, style="dim", markup=False)
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        bar.add_task(what, total=None)
        yield
