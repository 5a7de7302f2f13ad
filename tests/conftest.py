"""Shared fixtures: a workspace per test session, problems described once, a way to climb."""

from __future__ import annotations

from pathlib import Path

import pytest

from rung import runner
from rung.spec import Device, Problem, Run, Status
from rung.store import Store

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
PROBLEMS = ROOT / "problems"
# Where a check's time went, on its summary line (progress.time_words), where its runs climbed in turn.
SPLIT = r"\d+\.\ds: outside runs \d+\.\d, start \d+\.\d, rungs \d+\.\d, profile \d+\.\d, other -?\d+\.\d"


class Climber:
    """Describes each problem once and climbs solutions into one shared workspace."""

    def __init__(self, workspace: Path) -> None:
        self.store = Store(workspace)
        self.described: dict[Path, tuple[Problem, Device]] = {}

    def __call__(self, problem_dir: Path, solution: Path) -> Run:
        if problem_dir not in self.described:
            self.described[problem_dir] = runner.describe(problem_dir, self.store.root / "scratch")
        problem, device = self.described[problem_dir]
        return runner.climb(self.store, problem, device, solution)


@pytest.fixture(scope="session")
def climb(tmp_path_factory: pytest.TempPathFactory) -> Climber:
    return Climber(tmp_path_factory.mktemp("workspace"))


def rung_of(run: Run, name: str):
    return next(r for r in run.rungs if r.name == name)


def statuses(run: Run) -> dict[str, Status]:
    return {r.name: r.status for r in run.rungs}


def workspace_files(climb: Climber) -> dict[str, tuple[int, int]]:
    """Every regular file of the climber's workspace, by path, with its size and mtime."""
    root = climb.store.root.parent
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def written_outside_its_run(climb: Climber, before: dict[str, tuple[int, int]], run: Run) -> set[str]:
    """The files of the workspace a climb changed outside its own run folder (the store's own
    database files aside), given `workspace_files` from before it."""
    ours = str(climb.store.run_dir(run.id).relative_to(climb.store.root.parent)) + "/"
    changed = {p for p, info in workspace_files(climb).items() if before.get(p) != info}
    return {p for p in changed if not p.startswith(ours) and not Path(p).name.startswith("rung.db")}
