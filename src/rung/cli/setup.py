"""The commands about this machine and workspace: `device`, `init`, `new`, `mcp`, `config`."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import Annotated

import typer

from rung import api, knobs, progress, render, scaffold, settings
from rung.cli.app import JsonOpt, ReadWorkspaceOpt, WorkspaceOpt, app, err, out
from rung.common import confine
from rung.spec import SCHEMA, dumps
from rung.store import find_workspace


@app.command()
def device(
    json_out: JsonOpt = False,
    workspace: ReadWorkspaceOpt = None,
    remeasure: Annotated[
        bool, typer.Option("--remeasure", help="Measure again, ignoring the cache.")
    ] = False,
) -> None:
    """This machine's GPU and its measured ceilings beside the datasheet (measured once, then
    cached), and what this kernel offers to confine solution processes."""
    asking = "asking a judge process about this machine (a GPU's ceilings are measured once: about a minute)"
    with contextlib.nullcontext() if json_out else progress.waiting(err, asking):
        dev = api.device(workspace, remeasure)
    confinement = confine.probe()
    if json_out:
        print(dumps({"schema": SCHEMA, "device": dev, "confinement": confinement}))
        return
    out.print(render.device(dev))
    out.print(render.confinement(confinement))


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="Workspace folder (created if missing).")] = Path("."),
) -> None:
    """A workspace for a coding agent: .rung/, problems/, context/, AGENTS.md (the loop), CLAUDE.md, .mcp.json."""
    for path in scaffold.init_workspace(folder):
        out.print(f"created {path}", markup=False)
    steps = [] if folder.resolve() == Path.cwd().resolve() else [f"cd {shlex.quote(str(folder))}"]
    steps += ["rung new my_op", "rung check problems/my_op"]
    out.print("next (problems/my_op: a problem that already climbs, to edit; then its solutions checked):")
    for step in steps:
        out.print(f"  {step}", markup=False)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="Problem name: lower case, digits, underscores.")],
    problems: Annotated[
        Path | None,
        typer.Option(
            "--problems",
            help="Folder of problems (default: the workspace's problems/, as rung init made it).",
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            "--backend", help="Language of the first solution: torch, triton, cuda, cute, tilelang."
        ),
    ] = "torch",
) -> None:
    """A problem folder that already climbs the ladder (reference, shapes, cost model, a first solution)."""
    folder, _ = scaffold.new_problem(problems or find_workspace() / "problems", name, backend)
    here = Path.cwd().resolve()
    shown = folder.relative_to(here) if folder.is_relative_to(here) else folder
    out.print(f"created {shown}: edit problem.py, then rung check {shown}", markup=False)


@app.command()
def mcp(workspace: WorkspaceOpt = None) -> None:
    """Serve the verbs as tools of a Model Context Protocol server on stdio, for coding agents."""
    from rung import mcp_server

    mcp_server.serve(workspace)


@app.command()
def config(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Every setting: its value and where it came from (flag, environment, project file, default)."""
    resolved: dict[str, settings.Resolved] = ctx.obj
    project = settings.find_project_file(Path.cwd())
    if json_out:
        rows = [
            {
                "name": settings.field(n),
                "env": n,
                "flag": settings.flag(n),
                "value": r.value,
                "default": knobs.KNOBS[n].default,
                "source": r.source,
            }
            for n, r in resolved.items()
        ]
        print(dumps({"schema": SCHEMA, "project_file": str(project) if project else None, "settings": rows}))
        return
    where = project or f"no rung.toml or pyproject.toml with [tool.rung] in {Path.cwd()} or above"
    out.print(f"project file: {where}", style="dim", markup=False)
    width = max(len(settings.field(n)) for n in resolved)
    for n, r in resolved.items():
        out.print(f"{settings.field(n):<{width}}  {r.value!r:<12}  {r.source}", markup=False)
