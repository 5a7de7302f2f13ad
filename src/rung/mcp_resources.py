"""What `rung mcp` offers beside its tools: resources an agent or its person can read without a
tool call (the workspace's problems and runs) and the prompt that starts an agent on a problem.

Resources are JSON, the documents of rung.views: `rung://problems` (every problem folder under
`problems/` and every problem the store has runs of), `rung://problem/{name}` (its cases,
tolerance and cost model), `rung://runs` (the RECENT_RUNS latest runs as history rows),
`rung://run/{run}` (one run in full with its lineage).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rung import api, views
from rung.errors import UsageError
from rung.spec import SCHEMA, Run, dumps

if TYPE_CHECKING:  # imported by rung.mcp_server, which says how to install the SDK where it is missing
    from mcp.server.mcpserver import MCPServer

RECENT_RUNS = 50
PROBLEM_FILES = ("problem.py", "reference.py")  # rung's own format, GPU MODE's


def add(server: MCPServer, root: Path) -> None:
    """Register the resources and the prompt for the workspace at `root`."""

    @server.resource("rung://problems", name="problems", mime_type="application/json")
    def problems() -> str:
        """Every problem of the workspace: its folder, runs, passing runs and best run."""
        return dumps({"schema": SCHEMA, "problems": _problems(root)})

    @server.resource("rung://problem/{name}", name="problem", mime_type="application/json")
    def problem(name: str) -> str:
        """A problem under problems/: its cases, tolerance and cost model (`rung problem --json`)."""
        return dumps(views.problem_doc(api.problem(_folder(root, name))))

    @server.resource("rung://runs", name="runs", mime_type="application/json")
    def runs() -> str:
        """The latest runs of every problem, newest first, as history rows."""
        every = _every_run(root)
        rows = {r["run"]: r for r in views.versions(every)}
        latest = sorted(every, key=lambda r: r.id, reverse=True)[:RECENT_RUNS]
        return dumps({"schema": SCHEMA, "runs": [{"problem": r.problem, **rows[r.id]} for r in latest]})

    @server.resource("rung://run/{run}", name="run", mime_type="application/json")
    def run(run: str) -> str:
        """One run in full, every rung and artifact, with its lineage (`rung show RUN --json`)."""
        if not run.isdigit():
            raise UsageError(f"rung://run/{run}: a run is a number")
        chain = api.lineage(int(run), root)
        return dumps(views.show_doc(chain[0], chain))

    @server.prompt(name="optimize", title="Optimize this problem")
    def optimize(problem: str, goal: str = "") -> str:
        """Start work on a problem: what to read, how to check a version, when to stop."""
        return optimize_prompt(root, problem, goal)


def _every_run(root: Path) -> list[Run]:
    """Every stored run of every problem, oldest first."""
    with api.open_store(root) as store:
        return store.runs()


def _problems(root: Path) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    folder = root / "problems"
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        if any((p / f).is_file() for f in PROBLEM_FILES):
            found[p.name] = {"name": p.name, "folder": str(p.relative_to(root)), "runs": 0, "passed": 0}
    every = _every_run(root)
    for row, run in zip(views.versions(every), every, strict=True):
        entry = found.setdefault(run.problem, {"name": run.problem, "folder": None, "runs": 0, "passed": 0})
        entry["runs"] += 1
        entry["passed"] += int(row["ok"])
        best = entry.get("best")
        if _better(row, best):
            entry["best"] = {
                k: row.get(k) for k in ("run", "path", "speedup_vs_reference", "pct_of_roofline")
            }
    return list(found.values())


def _better(row: dict[str, Any], best: dict[str, Any] | None) -> bool:
    """A passing row timed faster than `best` (by its speedup over the reference), or the first
    passing row where none was timed."""
    if not row["ok"]:
        return False
    if best is None:
        return True
    return row.get("speedup_vs_reference", 0.0) > (best.get("speedup_vs_reference") or 0.0)


def _folder(root: Path, name: str) -> Path:
    folder = root / "problems" / name
    if "/" in name or name.startswith(".") or not folder.is_dir():
        raise UsageError(f"rung://problem/{name}: no problem folder problems/{name} in {root}")
    return folder


def optimize_prompt(root: Path, problem: str, goal: str) -> str:
    """The prompt text: the problem, the best version so far, and the loop rung expects."""
    rows = views.versions(api.history(root / problem, root))
    best = None
    for row in rows:
        best = row if _better(row, best) else best
    if best is None:
        start = "No version of it has passed yet: begin with a simple, correct one."
    else:
        figures = []
        if best.get("speedup_vs_reference") is not None:
            figures.append(f"x{best['speedup_vs_reference']:.2f} over the reference")
        if best.get("pct_of_roofline") is not None:
            figures.append(f"{best['pct_of_roofline']:.0%} of roofline")
        said = f": {', '.join(figures)}" if figures else ""
        start = f"The best version so far is run {best['run']} ({best['path']}{said})."
    lines = [
        f"Make the kernel of the rung problem `{problem}` faster without making it wrong.",
        f"{start} {len(rows)} version(s) have been checked; `history` lists them.",
        "",
        "Work like a kernel engineer, with rung's tools:",
        f"1. `problem_info` for `{problem}`: the reference, test and benchmark cases, tolerance, cost model.",
        "2. Read the best version (`show` its run, `read_artifact` its source) and why the others failed.",
        "3. Write the next version as a new solution file defining `custom_kernel`, and name what you",
        "   changed and why in a comment at its top.",
        f"4. `check` it (problem `{problem}`). A version that fails any rung is worthless, however fast:",
        "   read the failing rung's message and figures, fix it, check again.",
        "5. For a version that passes, read where the time goes: `bench` (ms per case, speedups),",
        "   `dump` (SASS facts) and its `.sass_src.txt` artifact (each source line with the SASS it",
        "   became, the hottest marked where Nsight Compute ran), `profile` on a GPU.",
        "6. Compare with `diff`, keep the faster passing version as the next parent, and repeat.",
        "Stop at 90% of roofline, or when versions stop getting faster.",
    ]
    if goal:
        lines += ["", f"Your person asks: {goal}"]
    return "\n".join(lines)
