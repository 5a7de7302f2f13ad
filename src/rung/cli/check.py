"""`rung check`: climb the ladder for each solution, printing as it climbs; exit codes as
`rung.cli` says."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from rung import (
    api,
    expectations,
    knobs,
    precheck,
    progress,
    render,
    scaffold,
    views,
)
from rung.cli.app import JsonOpt, WorkspaceOpt, app, err, out
from rung.errors import RungError
from rung.spec import Outcome, Run, RungResult, Status, dumps
from rung.store import find_workspace


@app.command()
def check(
    problem: Annotated[
        Path,
        typer.Argument(
            help="Problem: a folder with problem.py (rung's), a GPU MODE folder (reference.py, task.yml), "
            "or a KernelBench .py file (Model, get_inputs, get_init_inputs)."
        ),
    ],
    solutions: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Solution files defining custom_kernel (KernelBench: class ModelNew); none: every "
            ".py file under the problem's solutions/ folder (correct/, wrong/, ...)."
        ),
    ] = None,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="GPU MODE and KernelBench: fail on rung's own dtype, shape and tolerance rules too "
            "(by default the problem's own check decides and those rules warn; RUNG_STRICT=1).",
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Leave SKIPPED rungs out of the rung lines.")
    ] = False,
    exitfirst: Annotated[
        bool,
        typer.Option(
            "--exitfirst",
            "-x",
            help="Stop at the first version that fails, unless expected.yml says it must (one by one).",
        ),
    ] = False,
) -> None:
    """Climb the ladder for each solution: load, compile, run, correct, scale, guard, and the GPU rungs;
    one summary line at the end. `rung problem PATH` shows what a problem holds (cases, input
    shapes, tolerance, cost model)."""
    paths = solutions or scaffold.solutions_of(problem)
    at_once = not exitfirst and (knobs.get("RUNG_EXECUTOR") != "local" or knobs.get("RUNG_WORKERS") > 0)
    expected = expectations.read(problem) if problem.is_dir() else {}
    shown = Shown(json_out, quiet, exitfirst, expected)
    began = time.time()
    if not json_out:
        _first_look(paths, exitfirst, began)
    said = signal.signal(signal.SIGINT, functools.partial(_on_ctrl_c, shown))
    try:
        with knobs.scoped(RUNG_STRICT=1) if strict else contextlib.nullcontext():
            climb = _check_at_once if at_once else _check_one_by_one
            runs, wall_s = climb(problem, paths, workspace, shown)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (runner.on_sigterm): the runs are stored INTERRUPTED
        _say_interrupted(workspace, began)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGINT, said)
    seen = _seen(runs, expected)
    if json_out:
        doc = views.check_doc(runs)
        for solution, run in zip(doc["solutions"], runs, strict=True):
            if (want := expected.get(Path(run.solution.path).resolve())) is not None:
                solution["expected"] = {
                    **dataclasses.asdict(want),
                    "met": None if run.outcome == Outcome.UNVERIFIED else run.id not in seen.missed,
                }
        print(dumps({**doc, "summary": progress.summary(runs, wall_s, seen)}))
        raise typer.Exit(1 if seen.failing(runs) else 0)
    recap = progress.recap(runs, seen)
    if recap:
        out.print(Text("== not verified ==", style="bold"))
        for line in recap:
            out.print(line)
    if len(runs) < len(paths):
        out.print(
            f"stopped at the first failed version (-x): {len(paths) - len(runs)} not checked", markup=False
        )
    out.print(progress.summary_line(runs, wall_s, seen))
    raise typer.Exit(1 if seen.failing(runs) else 0)


def _seen(runs: list[Run], expected: dict[Path, expectations.Expected]) -> progress.Expectations:
    """Which wrong versions failed as their problem's expected.yml says, and how the others did not."""
    xfailed, missed = set(), {}
    for run in runs:
        want = expected.get(Path(run.solution.path).resolve())
        if want is None:
            continue
        how = expectations.missed(run, want)
        if how:
            missed[run.id] = how
        elif run.outcome == Outcome.FAILED:
            xfailed.add(run.id)
    return progress.Expectations(frozenset(xfailed), missed)


def _first_look(paths: list[Path], exitfirst: bool, began: float) -> None:
    """What the sources alone say, before any judge starts (precheck: a syntax error, a missing
    extra), printed at once; the ladder says it again in its place. With -x a version that fails
    here stops the check before anything climbs, as pytest's collection errors do."""
    failed = 0
    for path in paths:
        if not path.is_file():
            continue  # api.check names it
        found = precheck.load_verdict(path.name, path.read_bytes().decode(errors="replace"))
        if found is not None:
            failed += found.status == Status.FAILED
            word = "FAIL at load" if found.status == Status.FAILED else "SKIPPED at load"
            out.print(f"{word}  {path}: {found.message}", markup=False)
    if exitfirst and failed:
        out.print(
            f"== stopped before any judge started (-x): {failed} failed, {len(paths)} not climbed"
            f" in {time.time() - began:.1f}s ==",
            markup=False,
        )
        raise typer.Exit(1)


def _on_ctrl_c(shown: Shown, signum: int, frame: Any) -> None:
    """Say at once what Ctrl-C stops; the line saying where its record is follows once the run
    is stored INTERRUPTED and its judge killed."""
    now = f" {shown.climbing[0].solution.path} (run {shown.climbing[0].id})" if shown.climbing else ""
    err.print(f"interrupted: stopping{now}", markup=False)
    raise KeyboardInterrupt


def _say_interrupted(workspace: Path | None, began: float) -> None:
    """What the interrupt stopped and where its record is: each run of this check the store holds
    as INTERRUPTED."""
    try:
        with api.open_store(workspace) as store:
            stopped = [r for r in store.runs() if r.started >= began and r.outcome != Outcome.VERIFIED]
    except RungError:  # interrupted before the workspace was made
        stopped = []
    stopped = [r for r in stopped if r.verdict.startswith("INTERRUPTED")]
    for run in stopped:
        where = next(r.name for r in run.rungs if r.status == Status.INTERRUPTED)
        err.print(
            f"interrupted: {run.solution.path} at {where}; stored as run {run.id} INTERRUPTED (rung show {run.id})",
            markup=False,
        )
    if not stopped:
        err.print("interrupted before any version was stored", markup=False)


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a check prints while it climbs: nothing (--json), every rung or all but the SKIPPED
    ones (-q); and whether it stops at the first failed version (-x)."""

    json_out: bool
    quiet: bool
    exitfirst: bool
    expected: dict[Path, expectations.Expected] = dataclasses.field(default_factory=dict)
    climbing: list[Run] = dataclasses.field(default_factory=list)  # the run climbing now, once known

    def stops(self, run: Run) -> bool:
        """-x: whether the check stops after `run`: it failed, and not as expected.yml says."""
        want = self.expected.get(Path(run.solution.path).resolve())
        failed = run.outcome == Outcome.FAILED
        return self.exitfirst and failed and (want is None or bool(expectations.missed(run, want)))


def _check_one_by_one(
    problem: Path, paths: list[Path], workspace: Path | None, shown: Shown
) -> tuple[list[Run], float]:
    """Each solution in turn, its rung lines printed as each rung ends."""
    runs_dir = (workspace.resolve() if workspace else find_workspace()) / ".rung" / "runs"
    climbing = progress.Climbing(out, paths, runs_dir)

    def rung_done(run: Run, result: RungResult) -> None:
        shown.climbing[:] = [run]
        if len(run.rungs) == 1:
            out.print(render.header(run))
        if not (shown.quiet and result.status == Status.SKIPPED):
            render.print_rung_line(out, result)
        climbing.rung_done(run.id, result.name)

    def run_done(run: Run) -> None:
        out.print(render.verdict(run))
        climbing.run_done()

    if shown.json_out:
        return api.check(problem, paths, workspace, stop_after=shown.stops), climbing.wall_s
    with climbing:
        runs = api.check(
            problem, paths, workspace, on_rung=rung_done, on_run=run_done, stop_after=shown.stops
        )
        return runs, climbing.wall_s


def _check_at_once(
    problem: Path, paths: list[Path], workspace: Path | None, shown: Shown
) -> tuple[list[Run], float]:
    """The solutions climbing at once on RUNG_EXECUTOR's workers; a run printed whole as it ends
    (in the order given), for rung lines of several runs would interleave."""
    climbing = progress.ClimbingAtOnce(out, paths)

    def run_done(run: Run) -> None:
        render.print_run(out, run, hide_skipped=shown.quiet)
        climbing.run_done(run)

    executor, workers = str(knobs.get("RUNG_EXECUTOR")), int(knobs.get("RUNG_WORKERS")) or None
    if shown.json_out:
        return api.check_many(problem, paths, executor, workers, workspace), climbing.wall_s
    with climbing:
        runs = api.check_many(
            problem,
            paths,
            executor,
            workers,
            workspace,
            on_rung=lambda run, result: climbing.rung_done(run, result.name),
            on_run=run_done,
        )
    return runs, climbing.wall_s
