"""The `rung` command: a thin layer over the library that maps errors to exit codes and words.

Exit codes: 0 every solution passed every rung that ran; 1 a solution failed; 2 bad usage or a
bad problem (one line on stderr, no traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from rung import api, render, scaffold
from rung.errors import RungError
from rung.spec import SCHEMA, Run, RungResult, dumps

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rung: the verifiable loop for GPU kernels.",
)
# Piped output is read by scripts and agents: never wrap or truncate it.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (for scripts and agents).")]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Folder holding .rung/ (default: nearest upwards, else ./)."),
]


@app.command()
def check(
    problem: Annotated[Path, typer.Argument(help="Problem folder (holding problem.py).")],
    solutions: Annotated[list[Path], typer.Argument(help="Solution files defining custom_kernel.")],
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Climb the ladder for each solution: load, compile, run, correct, scale, guard, and the GPU rungs."""

    def progress(run: Run, result: RungResult) -> None:
        if len(run.rungs) == 1:
            out.print(render.header(run))
        out.print(render.rung_line(result))

    def done(run: Run) -> None:
        out.print(render.verdict(run))

    quiet = json_out
    runs = api.check(
        problem, solutions, workspace, on_rung=None if quiet else progress, on_run=None if quiet else done
    )
    if json_out:
        print(
            dumps(
                {
                    "schema": SCHEMA,
                    "problem": runs[0].problem,
                    "device": runs[0].device,
                    "solutions": [_solution_json(r) for r in runs],
                }
            )
        )
    raise typer.Exit(0 if all(r.ok for r in runs) else 1)


def _solution_json(run: Run) -> dict[str, Any]:
    return {
        "path": run.solution.path,
        "sha256": run.solution.sha256,
        "backend": run.solution.backend,
        "run": run.id,
        "seed": run.seed,
        "ok": run.ok,
        "verdict": run.verdict,
        "rungs": [r.to_dict() for r in run.rungs],
    }


@app.command()
def optimize(
    problem: Annotated[Path, typer.Argument(help="Problem folder or KernelBench file.")],
    agent: Annotated[
        str, typer.Option("--agent", help="tune (vary TUNE values) or replay (recorded versions).")
    ],
    start: Annotated[
        Path | None, typer.Option("--from", help="Version to start from (default: the best stored).")
    ] = None,
    replay: Annotated[
        list[Path] | None,
        typer.Option("--replay", help="For --agent replay: a version to play back (repeat)."),
    ] = None,
    rounds: Annotated[int, typer.Option(help="Round budget.")] = 10,
    parallel: Annotated[int, typer.Option(help="Candidates per round.")] = 1,
    target: Annotated[float, typer.Option(help="Stop at this fraction of the roofline.")] = 0.9,
    plateau: Annotated[
        int, typer.Option(help="Stop after this many rounds without a gain above the noise.")
    ] = 3,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Rounds of propose, climb the ladder, keep the best, until the roofline, a plateau or a budget."""
    from rung import optimize as loop

    if start is not None and not start.is_file():
        raise RungError(f"{start}: no such solution file")
    chosen = _agent(agent, start, replay or [])
    store = api.open_store(workspace)

    def show(event: dict[str, Any]) -> None:
        if not json_out:
            out.print(" ".join(f"{k}={v}" for k, v in event.items()), style="dim")

    outcome = loop.optimize(store, problem, chosen, start, rounds, parallel, target, plateau, show)
    summary = {
        "schema": SCHEMA,
        "reason": outcome.reason,
        "rounds": outcome.rounds,
        "best": _solution_json(outcome.best),
        "candidates": [_solution_json(r) for r in outcome.candidates],
    }
    if json_out:
        print(dumps(summary))
    else:
        out.print(f"best: run {outcome.best.id} {outcome.best.solution.path} ({outcome.best.verdict})")
        out.print(f"stopped: {outcome.reason}")
    raise typer.Exit(0 if outcome.best.ok else 1)


def _agent(name: str, start: Path | None, replay: list[Path]) -> Any:
    from rung.agents.replay import ReplayAgent
    from rung.agents.tune import TuneAgent

    if name == "replay":
        if not replay:
            raise RungError("--agent replay needs at least one --replay FILE")
        return ReplayAgent(replay)
    if name == "tune":
        if start is None:
            raise RungError("--agent tune needs --from SOLUTION: the version whose TUNE values it varies")
        return TuneAgent(start.read_text())
    raise RungError(f"unknown agent {name!r} (known: tune, replay)")


@app.command()
def device(
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    remeasure: Annotated[
        bool, typer.Option("--remeasure", help="Measure again, ignoring the cache.")
    ] = False,
) -> None:
    """This machine's GPU and its measured ceilings beside the datasheet (measured once, then cached)."""
    if not json_out:
        err.print(
            "asking a worker about this machine (a GPU's ceilings are measured once: about a minute)",
            style="dim",
        )
    dev = api.device(workspace, remeasure)
    if json_out:
        print(dumps({"schema": SCHEMA, "device": dev}))
        return
    out.print(render.device(dev))


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="Workspace folder (created if missing).")] = Path("."),
) -> None:
    """A workspace for a coding agent: .rung/, problems/, context/, AGENTS.md (the loop), CLAUDE.md."""
    for path in scaffold.init_workspace(folder):
        out.print(f"created {path}")
    out.print(f"next: rung new NAME, then rung check {folder / 'problems' / 'NAME'} <solution.py>")


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Problem name: lower case, digits, underscores.")],
    problems: Annotated[Path, typer.Option("--problems", help="Folder of problems.")] = Path("problems"),
) -> None:
    """A problem folder that already climbs the ladder (reference, shapes, cost model, a first solution)."""
    folder = scaffold.new_problem(problems, name)
    out.print(
        f"created {folder}: edit problem.py, then rung check {folder} {folder}/solutions/correct/torch_first.py"
    )


@app.command()
def history(
    problem: Annotated[Path, typer.Argument(help="Problem folder, or its name.")],
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """List every version checked for a problem, with its verdict and key figures."""
    runs = api.history(problem, workspace)
    if json_out:
        print(dumps({"schema": SCHEMA, "problem": problem.name, "runs": [_solution_json(r) for r in runs]}))
        return
    if not runs:
        out.print(f"no runs for {problem.name} in this workspace")
        return
    out.print(render.history(runs))


@app.command()
def show(
    run_id: Annotated[int, typer.Argument(help="Run number, as printed by check and history.")],
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Show one stored run: every rung, its figures and its artifacts."""
    run = api.show(run_id, workspace)
    if json_out:
        print(dumps(run))
        return
    render.print_run(out, run)
    for r in run.rungs:
        for a in r.artifacts:
            out.print(f"    {r.name}: {a}", style="dim")


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2); rung's own errors are one line, exit 2."""
    try:
        app()
    except RungError as e:
        err.print(f"rung: error: {e}")
        sys.exit(2)
