"""How runs look to a person: one line per rung, a verdict, a history table, a diff, a problem (rich)."""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from rung import progress, rung_table, views
from rung.common.ceilings_datasheet import datasheet
from rung.rung_table import figure_text as _fmt
from rung.spec import Device, Outcome, Problem, Run, RungResult, Status

STYLE = {
    Status.OK: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.ERROR: ("!", "red"),
    Status.TIMEOUT: ("⧗", "red"),
    Status.INTERRUPTED: ("■", "yellow"),
    Status.SKIPPED: ("-", "dim"),
}


OUTCOME_STYLE = {
    Outcome.VERIFIED: "bold green",
    Outcome.FAILED: "bold red",
    Outcome.UNVERIFIED: "bold yellow",
}


def figures(r: RungResult) -> str:
    """The few numbers of a rung worth a glance (its headline in `rung_table`)."""
    return rung_table.headline(r.name, r.metrics)


MESSAGE_COLUMN = 31  # where a rung's further message lines start


def rung_line(r: RungResult) -> Text:
    """The rung on one line (a multi-line message's further lines indented under it), unwrapped:
    piped output is read by scripts and agents."""
    head, body = _rung_parts(r)
    return head + Text("\n" + " " * MESSAGE_COLUMN).join(body.split("\n"))


def rung_row(r: RungResult) -> Table:
    """The rung fitted to a terminal: the message wrapped at word boundaries (a word longer than
    the line folded), every continuation line indented under the message's column."""
    head, body = _rung_parts(r)
    grid = Table.grid()
    grid.add_column(no_wrap=True, width=head.cell_len)
    grid.add_column(overflow="fold")
    grid.add_row(head, body)
    return grid


def _rung_parts(r: RungResult) -> tuple[Text, Text]:
    glyph, colour = STYLE[r.status]
    head = Text()
    head.append(f"  {glyph} ", style=colour)
    head.append(f"{r.name:<9}", style="bold")
    head.append(f"{r.status.value:<8}", style=colour)
    head.append(f"{r.seconds:6.2f}s  ", style="dim")
    body = Text()
    fig = figures(r)
    if fig:
        body.append(fig + "  ", style="cyan")
    body.append(r.message or "")
    return head, body


def print_rung_line(console: Console, r: RungResult) -> None:
    """One rung: fitted to the width where the console wraps (a terminal), else on one line."""
    console.print(rung_line(r) if console.soft_wrap else rung_row(r))


def header(run: Run) -> Text:
    t = Text()
    t.append(run.solution.path, style="bold")
    t.append(
        f"  {run.solution.sha256[:10]}  run {run.id}  seed {run.seed}  on {run.device.name}", style="dim"
    )
    return t


def verdict(run: Run) -> Text:
    counts: dict[str, int] = {}
    for r in run.rungs:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    tally = ", ".join(f"{n} {s.lower()}" for s, n in counts.items())
    line = Text.assemble(
        ("  verdict: ", "bold"),
        (run.verdict, OUTCOME_STYLE[run.outcome]),
        (f"  ({tally}; {progress.time_words(run.time_to_verdict.to_dict())})", "dim"),
    )
    if run.outcome == Outcome.UNVERIFIED:
        line.append(f"\n  not verified here: {run.why}", style="yellow")
    said = witnessed(run)
    if said:
        line.append(f"\n  {said}", style="dim")
    return line


def witnessed(run: Run, witnesses: dict[int, dict[str, Any]] | None = None) -> str:
    """Each bench figure with its mark (views.figure_marks): 'figures: n=4096 0.0123 ms witnessed
    (Nsight Compute 0.0120 ms), ...'; '' where nothing was timed."""
    marks = views.figure_marks(run, (witnesses or {}).get(run.id))
    return "figures: " + ", ".join(_marked(m) for m in marks) if marks else ""


def _marked(mark: dict[str, Any]) -> str:
    case = " ".join(f"{k}={v}" for k, v in mark["case"].items()) if isinstance(mark["case"], dict) else ""
    ncu = f" (Nsight Compute {mark['ncu_ms']:.4g} ms)" if "ncu_ms" in mark else ""
    return f"{case} {_ms(mark['median_ms']) or '-'} ms {mark['witness']}{ncu}".strip()


def print_run(console: Console, run: Run, hide_skipped: bool = False) -> None:
    console.print(header(run))
    for r in run.rungs:
        if not (hide_skipped and r.status == Status.SKIPPED):
            print_rung_line(console, r)
    console.print(verdict(run))


def print_rung(console: Console, run: Run, r: RungResult) -> None:
    """One rung of a stored run in full: its line, every figure (long ones cut), its artifacts."""
    console.print(header(run))
    print_rung_line(console, r)
    for key, value in r.metrics.items():
        text = _fmt(value) if isinstance(value, (int, float, str)) else json.dumps(value, default=str)
        cut = text if len(text) <= 160 else text[:160] + f"… ({len(text)} chars; --json for all)"
        console.print(f"    {key}: {cut}", style="dim", markup=False)
    for a in r.artifacts:
        console.print(f"    artifact: {a}", style="dim", markup=False)


def print_problem(console: Console, problem: Problem) -> None:
    """A problem's cases, tolerance and cost model, as its files declare them."""
    console.print(Text.assemble((problem.name, "bold"), (f"  {problem.path}", "dim")))
    if problem.doc.strip():
        console.print(problem.doc.strip().splitlines()[0], markup=False)
    table = Table(show_edge=False, header_style="bold")
    table.add_column("case")
    table.add_column("values")
    for kind, cases in (("test", problem.tests), ("benchmark", problem.benchmarks)):
        for i, case in enumerate(cases):
            table.add_row(f"{kind} {i}", " ".join(f"{k}={v}" for k, v in case.items()))
    console.print(table)
    tol = ", ".join(f"{k}={v}" for k, v in problem.tolerance.items()) or "the per-dtype default"
    if problem.own_check:
        tol = f"decided by {problem.own_check}; rung's ({tol}) warns, fails with --strict"
    console.print(f"tolerance: {tol}", markup=False)
    console.print(
        "cost model: yes (roofline)"
        if problem.has_cost
        else "cost model: none (roofline from an estimate: FLOPs counted from the reference, "
        "bytes = inputs + outputs)",
        markup=False,
    )


def print_diff(console: Console, doc: dict[str, Any]) -> None:
    """Two runs compared (views.diff_doc): the source diff, status changes, case times a → b, the
    build figures that changed (registers, SASS instructions, load widths, ...)."""
    a, b = doc["a"], doc["b"]
    console.print(
        f"run {a['run']} {a['path']} ({a['verdict']}) → run {b['run']} {b['path']} ({b['verdict']})",
        style="bold",
        markup=False,
    )
    for line in doc["source_diff"].splitlines() or ["(same source)"]:
        added, removed = line.startswith("+") and not line.startswith("+++"), line.startswith("-")
        style = "green" if added else "red" if removed and not line.startswith("---") else "dim"
        console.print(Text(line, style=style))
    for r in doc["rungs"]:
        console.print(f"  {r['name']:<9}{r['a'] or '-'} → {r['b'] or '-'}", markup=False)
    if not doc["rungs"]:
        console.print("  every rung ended as before", style="dim")
    if "not_compared" in doc:
        console.print(f"  {doc['not_compared']}", style="yellow", markup=False)
    if doc["bench"]:
        table = Table(show_edge=False, header_style="bold")
        for col in ("case", "a_ms", "b_ms", "b/a"):
            table.add_column(col, justify="left" if col == "case" else "right")
        for row in doc["bench"]:
            table.add_row(
                " ".join(f"{k}={v}" for k, v in row["case"].items()),
                _fmt(row["a_median_ms"]) if row["a_median_ms"] is not None else "-",
                _fmt(row["b_median_ms"]) if row["b_median_ms"] is not None else "-",
                f"{row['ratio']:.3f}" if "ratio" in row else "",
            )
        console.print(table)
    if doc["build"]:
        changes = ", ".join(f"{c['figure']} {_or_dash(c['a'])} → {_or_dash(c['b'])}" for c in doc["build"])
        console.print(f"  build: {changes}", markup=False)


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def history(runs: list[Run]) -> Table:
    """Every version, oldest first: its parent, verdict, the median time of each benchmark case,
    the speedups over the reference and the parent and the percent of roofline (geometric means
    over the cases), its climb's wall time; a failed version says why in its verdict column. A
    figure no version has (nothing timed on a CPU) gets no column."""
    rows = views.versions(runs)
    figures: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        (f"{label} ms", functools.partial(_case_ms, key)) for label, key in _case_columns(rows).items()
    ]
    figures += [
        ("x ref", lambda row: _times(row.get("speedup_vs_reference"))),
        ("x parent", _vs_parent),
        ("roofline", lambda row: f"{row['pct_of_roofline']:.0%}" if "pct_of_roofline" in row else ""),
        ("build (vs parent)", functools.partial(_build_cell, {row["run"]: row["build"] for row in rows})),
    ]
    cells = [[cell(row) for _, cell in figures] for row in rows]
    shown = [i for i in range(len(figures)) if any(c[i] for c in cells)]
    table = Table(show_edge=False, header_style="bold")
    table.add_column("run", justify="right")
    for col in ("when", "solution", "hash", "backend", "parent", "verdict"):
        table.add_column(col, justify="right" if col == "parent" else "left")
    for i in shown:
        table.add_column(figures[i][0], justify="right")
    table.add_column("wall_s", justify="right")
    for row, figure_cells in zip(rows, cells, strict=True):
        verdict_text = Text(row["verdict"], style=OUTCOME_STYLE[Outcome(row["outcome"])].split()[-1])
        if row["why"]:
            verdict_text.append(f": {_cut(row['why'], 60)}", style="dim")
        table.add_row(
            str(row["run"]),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started"])),
            row["path"],
            row["sha256"][:10],
            row["backend"],
            str(row["parent_run"]) if row["parent_run"] is not None else "",
            verdict_text,
            *(figure_cells[i] for i in shown),
            f"{row['wall_s']:.1f}",
        )
    return table


def _build_cell(builds: dict[int, dict[str, int]], row: dict[str, Any]) -> str:
    """A version's build at a glance: registers and SASS instructions (with the change from its
    parent's), spills, tensor-core instructions and the load widths where there are any."""
    own, parent = row["build"], builds.get(row["parent_run"], {}) if row["parent_run"] is not None else {}
    parts = []
    for key, unit in (("registers", "regs"), ("sass_instructions", "SASS"), ("spills", "spills")):
        if key in own and (own[key] or key != "spills"):
            change = own[key] - parent[key] if key in parent else 0
            parts.append(f"{own[key]} {unit}" + (f" ({change:+d})" if change else ""))
    if own.get("tensor_core_instructions"):
        parts.append(f"{own['tensor_core_instructions']} TC")
    loads = sorted((int(k[4:]) for k, n in own.items() if k.startswith("ldg_") and n), reverse=True)
    if loads:
        parts.append("ld " + "/".join(map(str, loads)) + "b")
    return ", ".join(parts)


def _vs_parent(row: dict[str, Any]) -> str:
    # A parent timed on another GPU model gets no ratio: the cell names that device instead.
    return "other GPU" if "not_compared" in row else _times(row.get("speedup_vs_parent"))


def _case_ms(key: str, row: dict[str, Any]) -> str:
    return next(
        (_ms(c["median_ms"]) for c in row["cases"] if json.dumps(c["case"], sort_keys=True) == key), ""
    )


def print_lineage(console: Console, rows: list[dict[str, Any]]) -> None:
    """A run's ancestry (views.show_doc's `lineage`), nearest first: each version's verdict and
    figures against its own parent."""
    if len(rows) < 2:
        console.print("  lineage: no parent version", style="dim")
        return
    console.print("  lineage (nearest first):", style="bold")
    for row in rows:
        figures = " ".join(
            text
            for text in (
                _times(row.get("speedup_vs_reference")) + " ref" if "speedup_vs_reference" in row else "",
                _times(row.get("speedup_vs_parent")) + " parent" if "speedup_vs_parent" in row else "",
                "parent on another GPU" if "not_compared" in row else "",
                f"{row['pct_of_roofline']:.0%} roofline" if "pct_of_roofline" in row else "",
            )
            if text
        )
        console.print(
            f"    run {row['run']:<5} {row['verdict']:<16} {figures:<32} {row['path']}",
            markup=False,
            highlight=False,
        )


def _case_columns(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Each benchmark case any version timed, in the order first timed: its label -> its key."""
    found: dict[str, str] = {}
    for row in rows:
        for c in row["cases"]:
            label = " ".join(f"{k}={v}" for k, v in c["case"].items())
            found.setdefault(label, json.dumps(c["case"], sort_keys=True))
    return found


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _times(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else f"x{value:.2f}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def device(dev: Device) -> Group:
    """The device's measured ceilings beside the datasheet, then what NVML says of it now."""
    return Group(_ceilings(dev), gpu_facts(dev.nvml))


def _ceilings(dev: Device) -> Table:
    table = Table(
        title=f"{dev.name} ({dev.arch or dev.kind}, driver {dev.driver or '-'})", header_style="bold"
    )
    for col in ("ceiling", "measured", "datasheet", "measured/datasheet"):
        table.add_column(col, justify="left" if col == "ceiling" else "right")
    sheet = datasheet(dev.name) or {}
    for key, value in dev.ceilings.items():
        if not isinstance(value, (int, float)):
            continue
        ref = sheet.get(key)
        table.add_row(key, f"{value:,.1f}", f"{ref:,.0f}" if ref else "", f"{value / ref:.0%}" if ref else "")
    if not dev.ceilings:
        table.add_row("(no GPU: nothing to measure)", "", "", "")
    if dev.ceilings.get("not_cached"):
        table.caption = f"not cached, measured again next time: {dev.ceilings['not_cached']}"
    return table


def gpu_facts(facts: dict[str, Any]) -> Table | Text:
    """NVML's record of the GPU, a row per fact (a fact NVML could not read says why), or one
    line saying why there is none."""
    if not facts.get("available"):
        return Text(f"NVML: unavailable ({facts.get('reason', 'not read')})", style="dim")
    table = Table(title="the GPU now, through NVML", header_style="bold")
    table.add_column("fact")
    table.add_column("value")
    unread = facts.get("unread", {})
    for key, value in facts.items():
        if key in ("available", "unread"):
            continue
        shown = (", ".join(value) or "none") if isinstance(value, list) else _fmt(value)
        table.add_row(key, f"[dim]{unread[key]}[/dim]" if key in unread else shown)
    return table


def confinement(offered: dict[str, str]) -> Table:
    """What the kernel offers to confine a solution process ("no: why" where it is missing)."""
    table = Table(title="confinement of solution processes (docs/SECURITY.md)", header_style="bold")
    table.add_column("mechanism")
    table.add_column("here")
    for key, value in offered.items():
        table.add_row(key, value if value.startswith("no") else f"[green]{value}[/green]")
    return table


def event(e: dict[str, Any], rounds: int) -> str:
    """One line of optimize progress for a person (scripts read the same events as JSON lines)."""
    kind = e["event"]
    if kind == "round_start":
        best = f"{e['best_ms']:.4g} ms" if e.get("best_ms") is not None else "untimed"
        left = ", ".join(_left(k, v) for k, v in e["left"].items())
        return (
            f"round {e['round']}/{rounds} · {e['in_flight']} candidate(s) in flight · "
            f"best run {e['best_run']} ({best}) · left: {left}"
        )
    if kind == "candidate":
        timed = f" {e['score_ms']:.4g} ms" if e.get("score_ms") is not None else ""
        return f"  run {e['run']}: {e['verdict']}{timed}  ({e['note']})"
    if kind == "climbing":
        return f"  climbing the ladder: {e['note']}"
    if kind == "no_version":
        return f"  no version: {e['error']}"
    if kind == "round":
        gain = "improved" if e["improved"] else "no gain"
        return f"round {e['round']} done: {gain}, best run {e['best_run']} ({e['round_s']:.1f} s)"
    if kind in ("start", "resume"):
        return f"{kind} from run {e['run']}: {e['path']}"
    if kind == "hint":
        return f"hint added: {e['hint']}"
    if kind == "tool":
        ran = f" -> run {e['run']}" if e.get("run") is not None else ""
        refused = f" (refused: {e['error'][:80]})" if e.get("error") else ""
        return f"  tool {e['tool']} {e['seconds']:.1f} s{ran}{refused}"
    if kind == "repairing":
        return f"run {e['run']} fails ({e['verdict']}): the agent repairs it first"
    if kind == "repaired":
        return f"  repaired: run {e['run']} passes"
    if kind == "profiled":
        return f"  profiled the best, run {e['run']}, as run {e['profile_run']}: {e.get('witness', 'unwitnessed')}"
    if kind == "contradicted":
        return f"  run {e['run']} not kept as the best: {e['message']}"
    if kind == "paused":
        return "paused by the person: waiting for rung hint PROBLEM --resume"
    if kind == "resumed":
        return f"resumed after {e['paused_s']:.0f} s"
    return " ".join(f"{k}={v}" for k, v in e.items())


def _left(key: str, value: Any) -> str:
    if key == "wall_s":
        return f"{value / 60:.1f} min"
    if key == "usd":
        return f"${value:.2f}"
    return f"{value} {key}"
