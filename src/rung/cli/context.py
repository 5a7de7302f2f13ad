"""`rung context`: documentation and example code indexed for agents, added and searched."""

from __future__ import annotations

from typing import Annotated

import typer

from rung import (
    api,
    views,
)
from rung.cli.app import JsonOpt, WorkspaceOpt, app, out
from rung.errors import RungError
from rung.spec import SCHEMA, dumps

context_app = typer.Typer(
    no_args_is_help=True, help="Search documentation and example code indexed in .rung/context.db."
)
app.add_typer(context_app, name="context")


@context_app.command("add")
def context_add(
    targets: Annotated[
        list[str] | None, typer.Argument(help="Files, folders or installed packages (by import name).")
    ] = None,
    builtin: Annotated[
        bool,
        typer.Option(
            "--builtin",
            help="Also the built-in sources found here: the DSL packages (Triton, CuTe DSL, TileLang) "
            "and the CUDA toolkit's PTX and runtime headers.",
        ),
    ] = False,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Index text, Python, CUDA and PTX files; adding a source again replaces it."""
    from rung.context_sources import BUILTINS

    if not targets and not builtin:
        raise RungError("context add needs a PATH_OR_PACKAGE or --builtin")
    added = {t: api.context_add(t, workspace) for t in targets or []}
    builtins = api.context_builtin(workspace) if builtin else {}
    absent = [name for name in BUILTINS if builtin and name not in builtins]
    added.update(builtins)
    if json_out:
        print(dumps({"schema": SCHEMA, "added": added, "absent": absent}))
        return
    for source, count in added.items():
        out.print(f"{source}: {count} snippets", markup=False)
    if absent:
        out.print(f"not installed: {', '.join(absent)}", style="dim")


@context_app.command("search")
def context_search(
    query: Annotated[list[str], typer.Argument(help="Free text: words, names, `tl.dot`, `cp.async.bulk`.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Most snippets to show.")] = 8,
    json_out: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """The best snippets for QUERY, best first, with file and first line."""
    text = " ".join(query)
    snippets = api.context_search(text, limit, workspace)
    if json_out:
        print(dumps(views.context_doc(text, snippets)))
        return
    if not snippets and not api.context_sources(workspace):
        out.print("nothing indexed: rung context add PATH_OR_PACKAGE, or rung context add --builtin")
    elif not snippets:
        out.print(f"no snippets match {text!r} (rung context sources lists what is indexed)", markup=False)
    for s in snippets:
        out.print(f"{s.path}:{s.line}", markup=False)
        out.print("\n".join("    " + line for line in s.text.splitlines()[:8]), style="dim", markup=False)


@context_app.command("sources")
def context_sources(json_out: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every indexed source with its number of snippets."""
    sources = api.context_sources(workspace)
    if json_out:
        print(dumps({"schema": SCHEMA, "sources": [{"source": s, "snippets": n} for s, n in sources]}))
        return
    if not sources:
        out.print("nothing indexed: rung context add PATH_OR_PACKAGE, or rung context add --builtin")
    for source, count in sources:
        out.print(f"{source}: {count} snippets", markup=False)
