"""The JSON documents rung prints with `--json`, as plain dicts: one place, so the CLI and the MCP
server say the same thing in the same words.

Every document carries `"schema": SCHEMA` and is printed with `spec.dumps` (a non-finite float
becomes null, its reason under its object's `null_reasons`). Keys are stable: scripts and agents
read them.

Times measured on different GPU models are never compared as if they were one: where two runs'
devices differ (`other_device`), a version's speedup over its parent and a diff's ratios are left
out and `not_compared` says why. The device record travels with each run.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rung.common.stats import geomean
from rung.errors import UsageError
from rung.spec import SCHEMA, BenchCase, Problem, RooflineCase, Run

if TYPE_CHECKING:
    from rung.context import Snippet


def solution_json(run: Run, witnesses: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """One solution's climb, as `check`, `history` and `optimize` list it; `witnesses`: the optimize
    loop's witness of a version, by run (`figure_marks`)."""
    return {
        "path": run.solution.path,
        "sha256": run.solution.sha256,
        "backend": run.solution.backend,
        "run": run.id,
        "seed": run.seed,
        "ok": run.ok,
        "outcome": run.outcome.value,
        "verdict": run.verdict,
        "why": run.why,
        "rungs": [r.to_dict() for r in run.rungs],
        "bench_figures": figure_marks(run, (witnesses or {}).get(run.id)),
        "time_to_verdict": run.time_to_verdict.to_dict(),
    }


def figure_marks(run: Run, witness: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each bench case's figure and what stands behind it (issue 39): `witnessed` where Nsight
    Compute, timing the same case's call in a process of its own, reads it within the band for
    its size (`ncu_ms` beside it); `contradicted` where the figure reads faster than that band
    allows (the version FAILED, `why` says how); else `unwitnessed`, a figure only the solution's
    process measured: only the profiled case (the last) can have a witness, and only where
    profile ran. `witness`: one taken apart from the run (the optimize loop's profile climb of a
    version it chose), else the run's own profile rung's."""
    profile = run.rung("profile")
    w = witness or (profile.metrics.get("witness") if profile else None) or {}
    marks = []
    for c in bench_cases(run):
        mark: dict[str, Any] = {"case": c["case"], "median_ms": c.get("median_ms"), "witness": "unwitnessed"}
        same = json.dumps(w.get("case"), sort_keys=True) == json.dumps(c["case"], sort_keys=True)
        if same and w.get("verdict") in ("witnessed", "contradicted"):
            mark["witness"] = w["verdict"]
            if "ncu_us" in w:
                mark["ncu_ms"] = w["ncu_us"] / 1e3
            if "profile_run" in w:
                mark["profile_run"] = w["profile_run"]
            if w["verdict"] == "contradicted":
                mark["why"] = w.get("message") or (profile.message.splitlines()[0] if profile else "")
        marks.append(mark)
    return marks


def check_doc(runs: list[Run]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "problem": runs[0].problem,
        "device": dataclasses.asdict(runs[0].device),
        "solutions": [solution_json(r) for r in runs],
    }


def history_doc(
    problem_name: str, runs: list[Run], offset: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """Every version of a problem, oldest first, as `version_row` gives it (its rungs in `show`).
    `offset` and `limit` page it (an agent's context is bounded): `total` runs in all, `next_offset`
    the first one left out, None at the end. A parent is looked up among all `runs`, paged or not."""
    rows = versions(runs)
    page = rows[offset : None if limit is None else offset + limit]
    end = offset + len(page)
    return {
        "schema": SCHEMA,
        "problem": problem_name,
        "total": len(rows),
        "offset": offset,
        "next_offset": end if end < len(rows) else None,
        "runs": page,
    }


def versions(runs: list[Run]) -> list[dict[str, Any]]:
    """`version_row` of each run, its parent being the latest earlier run of its parent solution."""
    latest: dict[str, Run] = {}
    rows = []
    for run in sorted(runs, key=lambda r: r.id):
        rows.append(version_row(run, latest.get(run.solution.parent or "")))
        latest[run.solution.sha256] = run
    return rows


def version_row(run: Run, parent: Run | None) -> dict[str, Any]:
    """One version as a person compares it with others: its verdict (and, failed, why), per
    benchmark case the median time, the speedup over the reference and over its parent, the
    percent of roofline; over the cases, their geometric means."""
    apart = other_device(parent, run) if parent else None
    own, before = _medians(run), _medians(parent) if parent and not apart else {}
    roof = _by_case(roofline_cases(run), "pct_of_roofline")
    vs_ref = _by_case(bench_cases(run), "speedup_vs_reference")
    cases = []
    for key, median in own.items():
        row: dict[str, Any] = {"case": json.loads(key), "median_ms": median}
        if key in vs_ref:
            row["speedup_vs_reference"] = vs_ref[key]
        prior = before.get(key)
        if median and prior:
            row["speedup_vs_parent"] = prior / median
        if key in roof:
            row["pct_of_roofline"] = roof[key]
        cases.append(row)
    return {
        "run": run.id,
        "path": run.solution.path,
        "sha256": run.solution.sha256,
        "backend": run.solution.backend,
        "started": run.started,
        "wall_s": round(run.wall_s, 3),
        "ok": run.ok,
        "outcome": run.outcome.value,
        "verdict": run.verdict,
        "why": run.why,
        "device": run.device.name,
        "parent": run.solution.parent,
        "parent_run": parent.id if parent else None,
        **({"not_compared": apart} if apart else {}),
        "cases": cases,
        "build": build_figures(run),
        **{
            key: geomean([c[key] for c in cases if key in c])
            for key in ("speedup_vs_reference", "speedup_vs_parent", "pct_of_roofline")
            if any(key in c for c in cases)
        },
    }


def lineage(run: Run, runs: list[Run]) -> list[Run]:
    """`run` and its ancestors, nearest first: each parent the latest run of the parent solution
    before its child (a cycle, which content hashes cannot make, would stop at the first repeat)."""
    chain, seen = [run], {run.id}
    while chain[-1].solution.parent:
        child = chain[-1]
        parent = max(
            (r for r in runs if r.solution.sha256 == child.solution.parent and r.id < child.id),
            key=lambda r: r.id,
            default=None,
        )
        if parent is None or parent.id in seen:
            break
        chain.append(parent)
        seen.add(parent.id)
    return chain


def show_doc(run: Run, ancestry: list[Run] | None = None) -> dict[str, Any]:
    """One run in full; with `ancestry` (`lineage`'s chain), `lineage`: the version rows of the
    run and each of its ancestors, nearest first, each against its own parent."""
    doc = run.to_dict()
    if ancestry is not None:
        doc["lineage"] = lineage_rows(ancestry)
    return doc


def lineage_rows(ancestry: list[Run]) -> list[dict[str, Any]]:
    """`version_row` of each run of a lineage (nearest first), each against the next, its parent."""
    parents = [*ancestry[1:], None]
    return [version_row(r, p) for r, p in zip(ancestry, parents, strict=True)]


def rung_doc(run: Run, name: str) -> dict[str, Any]:
    """One rung of a stored run; UsageError naming the rungs it has when it has no `name`."""
    found = run.rung(name)
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
    apart = other_device(run_a, run_b)
    return {
        "schema": SCHEMA,
        "a": _side(run_a),
        "b": _side(run_b),
        **({"not_compared": apart} if apart else {}),
        "source_diff": "".join(source_diff),
        "rungs": [
            {"name": n, "a": status_a.get(n), "b": status_b.get(n)}
            for n in names
            if status_a.get(n) != status_b.get(n)
        ],
        "bench": _bench_cases(run_a, run_b, compared=not apart),
        "build": build_changes(run_a, run_b),
    }


# What a build says of its kernels, over all of them: compile's resource figures (the largest),
# dump's SASS facts (summed). On a machine with no GPU these are all there is to compare.
COMPILE_FIGURES = {
    "registers": "max_registers",
    "shared_bytes": "max_shared_bytes",
    "spills": "spill_instructions",
}
DUMP_FIGURES = {"sass_instructions": "instructions", "local_memory_ops": "local_memory_ops"}


def build_figures(run: Run) -> dict[str, int]:
    """The build's figures of a run: registers, shared bytes and spill instructions (compile; the
    largest over its kernels), SASS instructions, local-memory and tensor-core instructions, and
    global loads and stores by width (`ldg_128`: dump; summed over its kernels). Only figures the
    run has; a value that is not a whole number is left out."""
    rungs = {r.name: r for r in run.rungs if r.status.value == "OK"}
    figures: dict[str, int] = {}
    compiled = rungs["compile"].metrics if "compile" in rungs else {}
    for key, source in COMPILE_FIGURES.items():
        if _count(compiled.get(source)):
            figures[key] = compiled[source]
    kernels = rungs["dump"].metrics.get("kernels", {}) if "dump" in rungs else {}
    facts = [k for k in kernels.values() if isinstance(k, dict)] if isinstance(kernels, dict) else []
    for key, source in DUMP_FIGURES.items():
        values = [k[source] for k in facts if _count(k.get(source))]
        if values:
            figures[key] = sum(values)
    if facts:
        tensor = [
            v for k in facts if isinstance(k.get("tensor_core"), dict) for v in k["tensor_core"].values()
        ]
        figures["tensor_core_instructions"] = sum(v for v in tensor if _count(v))
    for k in facts:
        widths = k.get("global_access_bits")
        for width, n in widths.items() if isinstance(widths, dict) else ():
            if _count(n) and str(width)[:3] in ("ldg", "stg") and str(width)[4:].isdigit():
                figures[str(width)] = figures.get(str(width), 0) + n
    return figures


def build_changes(run_a: Run, run_b: Run) -> list[dict[str, Any]]:
    """Each build figure that differs between two runs, a → b (None where one run lacks it)."""
    a, b = build_figures(run_a), build_figures(run_b)
    names = [*a, *(n for n in b if n not in a)]
    return [{"figure": n, "a": a.get(n), "b": b.get(n)} for n in names if a.get(n) != b.get(n)]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _side(run: Run) -> dict[str, Any]:
    return {
        "run": run.id,
        "path": run.solution.path,
        "sha256": run.solution.sha256,
        "ok": run.ok,
        "outcome": run.outcome.value,
        "verdict": run.verdict,
        "device": run.device.name,
    }


def other_device(a: Run, b: Run) -> str | None:
    """Why `a`'s times and `b`'s are not comparable (they ran on different GPU models), or None."""
    if (a.device.kind, a.device.name) == (b.device.kind, b.device.name):
        return None
    return (
        f"run {a.id} ran on {a.device.name}, run {b.id} on {b.device.name}: times from different"
        " devices are not compared"
    )


def _bench_cases(run_a: Run, run_b: Run, compared: bool = True) -> list[dict[str, Any]]:
    """Benchmark cases of either run, matched by their keyword values, in the order they ran;
    the ratio b / a only where both were timed on the same device (`compared`)."""
    timed_a, timed_b = _medians(run_a), _medians(run_b)
    rows = []
    for key in [*timed_a, *(k for k in timed_b if k not in timed_a)]:
        a, b = timed_a.get(key), timed_b.get(key)
        row: dict[str, Any] = {"case": json.loads(key), "a_median_ms": a, "b_median_ms": b}
        if a and b and compared:
            row["ratio"] = b / a
        rows.append(row)
    return rows


def _medians(run: Run) -> dict[str, float | None]:
    return _by_case(bench_cases(run), "median_ms", keep_missing=True)


def median_ms(run: Run, case: Any) -> float | None:
    """`run`'s bench median for `case` (matched by its keyword values), or None."""
    return _medians(run).get(json.dumps(case, sort_keys=True))


def bench_cases(run: Run) -> list[BenchCase]:
    """The bench rung's cases of `run`, as stored (each naming its `case`); [] where it did not run."""
    return _cases(run, "bench")


def roofline_cases(run: Run) -> list[RooflineCase]:
    """The roofline rung's cases of `run`, as stored (each naming its `case`); [] where it did not run."""
    return _cases(run, "roofline")


def _cases(run: Run, rung: str) -> list[Any]:
    found = run.rung(rung)
    cases = found.metrics.get("cases", []) if found else []
    return [c for c in cases if isinstance(c, dict) and "case" in c]


def _by_case(cases: Sequence[Mapping[str, Any]], key: str, keep_missing: bool = False) -> dict[str, Any]:
    """`key` of each of `cases`, by the case's keyword values as JSON."""
    return {json.dumps(c["case"], sort_keys=True): c.get(key) for c in cases if keep_missing or key in c}
