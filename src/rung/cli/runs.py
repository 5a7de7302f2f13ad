"""The commands that read the store (no judge starts): `history`, `report`, `show`, `diff`,
and `problem`, which reads a problem's files as data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rung import (
    api,
    render,
    views,
)
from rung.cli.app import JsonOpt, ReadWorkspaceOpt, app, out
from rung.problem_data import problem_name
from rung.spec import dumps
from rung.store import existing_workspace


@app.command()
def history(
    problem: Annotated[Path, typer.Argument(help="Problem folder, or its name.")],
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """List every version checked for a problem, with its verdict and key figures."""
    runs = api.history(problem, existing_workspace(workspace))
    if json_out:
        print(dumps(views.history_doc(problem_name(problem), runs)))
        return
    if not runs:
        out.print(f"no runs for {problem_name(problem)} in this workspace")
        return
    out.print(render.history(runs))


@app.command()
def report(
    problem: Annotated[
        Path | None,
        typer.Argument(help="Problem folder, or its name (default: the problem of the latest run)."),
    ] = None,
    out_path: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the page (default: .rung/report/<problem>.html)."),
    ] = None,
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Write a static HTML page of a problem's versions (works offline): times and % of roofline
    over the versions, a roofline chart, the best version's cases, every run's rungs and artifacts."""
    from rung import report as html_report  # matplotlib: imported by this command only

    doc = html_report.write(existing_workspace(workspace), problem, out_path)
    if json_out:
        print(dumps(doc))
        return
    counts = {word: sum(r["outcome"] == word for r in doc["runs"]) for word in ("verified", "failed")}
    out.print(
        f"wrote {doc['out']}: {len(doc['runs'])} versions of {doc['problem']}, {counts['verified']} verified, "
        f"{counts['failed']} failed, {len(doc['runs']) - sum(counts.values())} not verified here",
        markup=False,
    )


@app.command()
def show(
    run_id: Annotated[int, typer.Argument(help="Run number, as printed by check and history.")],
    rung_name: Annotated[
        str | None, typer.Option("--rung", help="Only this rung, with every figure (bench, dump, ...).")
    ] = None,
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Show one stored run: every rung, its figures, its artifacts and its lineage (its parents' runs)."""
    found = existing_workspace(workspace)
    run = api.show(run_id, found)
    if rung_name is not None:
        doc = views.rung_doc(run, rung_name)
        if json_out:
            print(dumps(doc))
        else:
            render.print_rung(out, run, next(r for r in run.rungs if r.name == rung_name))
        return
    doc = views.show_doc(run, api.lineage(run_id, found))
    if json_out:
        print(dumps(doc))
        return
    render.print_run(out, run)
    for r in run.rungs:
        for a in r.artifacts:
            out.print(f"    {r.name}: {a}", style="dim")
    render.print_lineage(out, doc["lineage"])


@app.command()
def diff(
    run_a: Annotated[int, typer.Argument(help="The earlier run.")],
    run_b: Annotated[int, typer.Argument(help="The run to compare with it.")],
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
) -> None:
    """Compare two stored runs: their sources, the rungs whose status changed, each case's time."""
    doc = api.diff(run_a, run_b, existing_workspace(workspace))
    if json_out:
        print(dumps(doc))
        return
    render.print_diff(out, doc)


@app.command()
def problem(
    path: Annotated[Path, typer.Argument(help="Problem folder or KernelBench file.")],
    json_out: JsonOpt = False,
) -> None:
    """What a problem holds: its test and benchmark cases, tolerance and cost model (read from
    its files as data: nothing of it runs)."""
    spec = api.problem(path)
    if json_out:
        print(dumps(views.problem_doc(spec)))
        return
    render.print_problem(out, spec)
