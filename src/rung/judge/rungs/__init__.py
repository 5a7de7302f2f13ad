"""The judge's side of each rung that needs the solution called, by rung name.

Each function takes the judge's `Session` and the request's params and returns a `RungResult`,
or raises `Failed` / `Skipped`; anything else the solution raises becomes ERROR in `main`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rung.judge.rungs import bench, compile, correct, guard, load, memcheck, profile, run, scopes
from rung.spec import RungResult

JUDGE_RUNGS: dict[str, Callable[[Any, dict[str, Any]], RungResult]] = {
    "load": load.load,
    "compile": compile.compile_rung,
    "run": run.run,
    "correct": correct.correct,
    "scale": correct.scale,
    "guard": guard.guard,
    "bench": bench.bench,
    "profile": profile.profile,
    "scopes": scopes.scopes,
    "memcheck": memcheck.memcheck,
}
