"""The verbs as functions, returning spec objects: what the CLI and, later, the MCP server call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rung import runner
from rung.errors import SolutionError
from rung.runner import OnRun, OnRung
from rung.spec import Device, Run
from rung.store import Store, find_workspace


def open_store(workspace: str | Path | None) -> Store:
    """The workspace's store: `workspace`, else the nearest folder upwards holding .rung/."""
    return Store(Path(workspace).resolve() if workspace else find_workspace())


def check(
    problem: str | Path,
    solutions: Sequence[str | Path],
    workspace: str | Path | None = None,
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
) -> list[Run]:
    """Climb the ladder for each solution of `problem`; the stored runs, in order."""
    paths = [Path(s) for s in solutions]
    for p in paths:
        if not p.is_file():
            raise SolutionError(f"{p}: no such solution file")
    store = open_store(workspace)
    try:
        spec, device = runner.describe(Path(problem), store.root / "scratch")
        return [runner.climb(store, spec, device, p, on_rung, on_run) for p in paths]
    finally:
        store.close()


def device(workspace: str | Path | None = None, remeasure: bool = False) -> Device:
    """This machine's device, with its measured ceilings where it is a GPU (cached per model and driver)."""
    store = open_store(workspace)
    try:
        return runner.probe_device(store.root / "scratch", remeasure)
    finally:
        store.close()


def history(problem: str | Path, workspace: str | Path | None = None) -> list[Run]:
    """Every stored run of `problem` (a folder or a name), oldest first."""
    p = Path(problem)
    store = open_store(workspace)
    try:
        return store.runs(p.stem if p.is_file() else p.resolve().name if p.exists() else p.name)
    finally:
        store.close()


def show(run_id: int, workspace: str | Path | None = None) -> Run:
    store = open_store(workspace)
    try:
        return store.run(run_id)
    finally:
        store.close()
