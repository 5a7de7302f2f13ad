"""The JSON documents rung prints with `--json`, as plain dicts: one place, so the CLI and the MCP
server say the same thing in the same words.

Every document carries `"schema": SCHEMA` and is printed with `spec.dumps` (non-finite floats
become strings). Keys are stable: scripts and agents read them.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from typing import TYPE_CHECKING, Any

from rung.errors import UsageError
from rung.spec import SCHEMA, Problem, Run

if TYPE_CHECKING:
    from rung.context import Snippet


def solution_json(run: Run) -> dict[str, Any]:
    """One solution's climb, as `check`, `history` and `optimize` list it."""
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


def check_doc(runs: list[Run]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "problem": runs[0].problem,
        "device": dataclasses.asdict(runs[0].device),
        "solutions": [solution_json(r) for r in runs],
    }


def history_doc(problem_name: str, runs: list[Run]) -> dict[str, Any]:
    return {"schema": SCHEMA, "problem": problem_name, "runs": [solution_json(r) for r in runs]}


def show_doc(run: Run) -> dict[str, Any]:
    return run.to_dict()


def rung_doc(run: Run, name: str) -> dict[str, Any]:
    """One rung of a stored run; UsageError naming the rungs it has when it has no `name`."""
    found = next((r for r in run.rungs if r.name == name), None)
    if found is None:
        have = ", ".join(r.name for r in run.rungs) or "none"
        raise UsageError(f"run {run.id} has no rung {name!r} (it has: {have})")
    return {"schema": SCHEMA, "run": run.id, "rung": found.to_dict()}


def problem_doc(problem: Problem) -> dict[str, Any]:
    return {"schema": SCHEMA, **dataclasses.asdict(problem)}


def context_doc(query: str, snippets: list[Snippet]) -> dict[str, Any]:
    return {"schema": SCHEMA, "query": query, "snippets": [dataclasses.asdict(s) for s in snippets]}


def diff_doc(run_a: Run, run_b: Run, source_a: str, source_b: str) -> dict[str, Any]:
    """Two runs side by side: the unified diff of their sources, every rung whose status changed,
    and each benchmark case's median a → b with the ratio b / a where both were timed."""
    source_diff = difflib.unified_diff(
        source_a.splitlines(keepends=True),
        source_b.splitlines(keepends=True),
        f"run {run_a.id}: {run_a.solution.path}",
        f"run {run_b.id}: {run_b.solution.path}",
    )
    status_a = {r.name: r.status.value for r in run_a.rungs}
    status_b = {r.name: r.status.value for r in run_b.rungs}
    names = [*status_a, *(n for n in status_b if n not in status_a)]
    return {
        "schema": SCHEMA,
        "a": _side(run_a),
        "b": _side(run_b),
        "source_diff": "".join(source_diff),
        "rungs": [
            {"name": n, "a": status_a.get(n), "b": status_b.get(n)}
            for n in names
            if status_a.get(n) != status_b.get(n)
        ],
        "bench": _bench_cases(run_a, run_b),
    }


def _side(run: Run) -> dict[str, Any]:
    return {
        "run": run.id,
        "path": run.solution.path,
        "sha256": run.solution.sha256,
        "ok": run.ok,
        "verdict": run.verdict,
    }


def _bench_cases(run_a: Run, run_b: Run) -> list[dict[str, Any]]:
    """Benchmark cases of either run, matched by their keyword values, in the order they ran."""
    timed_a, timed_b = _medians(run_a), _medians(run_b)
    rows = []
    for key in [*timed_a, *(k for k in timed_b if k not in timed_a)]:
        a, b = timed_a.get(key), timed_b.get(key)
        row: dict[str, Any] = {"case": json.loads(key), "a_median_ms": a, "b_median_ms": b}
        if a and b:
            row["ratio"] = b / a
        rows.append(row)
    return rows


def _medians(run: Run) -> dict[str, float | None]:
    bench = next((r for r in run.rungs if r.name == "bench"), None)
    cases = bench.metrics.get("cases", []) if bench else []
    return {json.dumps(c["case"], sort_keys=True): c.get("median_ms") for c in cases}
