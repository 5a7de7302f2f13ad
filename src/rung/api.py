"""The verbs as functions, returning spec objects: what the CLI and the MCP server call."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from rung import backends, problem_data, runner, views
from rung.context import ContextIndex, Snippet
from rung.errors import ProblemError, SolutionError, StoreError
from rung.runner import OnRun, OnRung
from rung.spare_judges import SpareJudges
from rung.spec import Device, Problem, Run
from rung.store import Store, existing_workspace, find_workspace


def open_store(workspace: str | Path | None) -> Store:
    """The workspace's store: `workspace`, else the nearest folder upwards holding .rung/."""
    return Store(Path(workspace).resolve() if workspace else find_workspace())


def check(
    problem: str | Path,
    solutions: Sequence[str | Path],
    workspace: str | Path | None = None,
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
    spares: SpareJudges | None = None,
    stop_after: Callable[[Run], bool] | None = None,
) -> list[Run]:
    """Climb the ladder for each solution of `problem`; the stored runs, in order (with
    `stop_after`, up to the first run it is true of). With `spares` (a long-lived caller's, as
    the MCP server's), the problem is described by the judge held there for it, if any: started
    while the caller waited, it has imported torch already."""
    paths = [Path(s) for s in solutions]
    for p in paths:
        if not p.is_file():
            raise SolutionError(f"{p}: no such solution file")
    with open_store(workspace) as store:
        held = spares.take(Path(problem)) if spares is not None else None
        first = backends.detect(paths[0].read_text(errors="replace")) if paths else None
        builds = first is not None and first.compile_solution is not None
        spec, device, judge = runner.describe_keeping(Path(problem), store.root / "scratch", held, builds)
        if not paths:
            judge.discard()
            return []
        # The judge that described the problem climbs the first solution: one start the fewer.
        runs = [runner.climb(store, spec, device, paths[0], on_rung, on_run, judge=judge)]
        for p in paths[1:]:
            if stop_after is not None and stop_after(runs[-1]):
                break
            runs.append(runner.climb(store, spec, device, p, on_rung, on_run))
        return runs


def check_many(
    problem: str | Path,
    solutions: Sequence[str | Path],
    executor: str = "local",
    workers: int | None = None,
    workspace: str | Path | None = None,
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
) -> list[Run]:
    """Climb the ladder for every solution of `problem` at once on `executor` (rung.executors:
    local, ssh://[user@]host[:port], ray[://address]) with `workers` slots where it takes a number;
    each run stored as it climbs, the runs handed to on_run and returned in the order given."""
    from rung import executors

    paths = [Path(s) for s in solutions]
    for p in paths:
        if not p.is_file():
            raise SolutionError(f"{p}: no such solution file")
    if not Path(problem).exists():
        raise ProblemError(f"{problem}: no such folder or file")
    runner.skipped_rungs()  # a bad RUNG_SKIP is a usage error here, before any worker starts
    chosen = executors.from_spec(executor, workers)
    with open_store(workspace) as store:
        return executors.check_batch(store, chosen, Path(problem), paths, on_rung, on_run)


def device(workspace: str | Path | None = None, remeasure: bool = False) -> Device:
    """This machine's device, with its measured ceilings where it is a GPU (cached per model and driver)."""
    with _scratch(workspace) as scratch:
        return runner.probe_device(scratch, remeasure)


def history(problem: str | Path, workspace: str | Path | None = None) -> list[Run]:
    """Every stored run of `problem` (a folder or a name), oldest first."""
    with open_store(workspace) as store:
        return store.runs(problem_data.problem_name(problem))


def show(run_id: int, workspace: str | Path | None = None) -> Run:
    with open_store(workspace) as store:
        return store.run(run_id)


def lineage(run_id: int, workspace: str | Path | None = None) -> list[Run]:
    """Run `run_id` and the runs of its ancestor versions, nearest first (views.lineage)."""
    with open_store(workspace) as store:
        run = store.run(run_id)
        return views.lineage(run, store.runs(run.problem))


def problem(path: str | Path) -> Problem:
    """What a problem declares (its cases, tolerance, whether it has a cost model), read from its
    files as data: no judge starts and no code of the problem runs."""
    return problem_data.read(path)


def diff(run_a: int, run_b: int, workspace: str | Path | None = None) -> dict[str, Any]:
    """Two stored runs compared: views.diff_doc of their runs and their solutions' stored sources."""
    with open_store(workspace) as store:
        a, b = store.run(run_a), store.run(run_b)
        return views.diff_doc(a, b, store.source(a.solution.sha256), store.source(b.solution.sha256))


@contextmanager
def _scratch(workspace: str | Path | None) -> Iterator[Path]:
    """Where a judge asked a question keeps its logs: the workspace's `.rung/scratch`, or, where
    `workspace` (or the nearest upwards) holds no `.rung/`, a temporary folder: a command that
    only asks creates no `.rung/`."""
    try:
        found: Path | None = existing_workspace(Path(workspace) if workspace else None)
    except StoreError:
        found = None
    if found is not None:
        yield found / ".rung" / "scratch"
        return
    with tempfile.TemporaryDirectory(prefix="rung-scratch-") as folder:
        yield Path(folder)


def context_index(workspace: str | Path | None = None) -> ContextIndex:
    """The workspace's index of documentation and example code, `.rung/context.db`."""
    with open_store(workspace) as store:  # the workspace, made where it is missing
        return ContextIndex(store.root.parent)


def context_add(target: str, workspace: str | Path | None = None) -> int:
    """Index a file, folder or installed package (again: replacing it); the number of snippets."""
    with closing(context_index(workspace)) as index:
        return index.add(target)


def context_builtin(workspace: str | Path | None = None) -> dict[str, int]:
    """Index the built-in sources found here (rung.context_sources.BUILTINS: the kernel languages'
    packages, the CUDA toolkit's headers): snippets per source."""
    with closing(context_index(workspace)) as index:
        return index.add_builtins()


def context_search(query: str, limit: int = 8, workspace: str | Path | None = None) -> list[Snippet]:
    """The best `limit` snippets for free-text `query`, best first."""
    with closing(context_index(workspace)) as index:
        return index.search(query, limit)


def context_sources(workspace: str | Path | None = None) -> list[tuple[str, int]]:
    """Every indexed source with its number of snippets."""
    with closing(context_index(workspace)) as index:
        return index.sources()
