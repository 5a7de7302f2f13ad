"""How runs look to a person: one line per rung, a verdict, a history table (rich)."""

from __future__ import annotations

import math
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rung.ceilings_datasheet import DATASHEET
from rung.spec import Device, Run, RungResult, Status

STYLE = {
    Status.OK: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.ERROR: ("!", "red"),
    Status.TIMEOUT: ("⧗", "red"),
    Status.SKIPPED: ("-", "dim"),
}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return str(v)
        return f"{v:.3g}"
    return str(v)


def figures(r: RungResult) -> str:
    """The few numbers of a rung worth a glance."""
    m = r.metrics
    if r.name == "load":
        return f"backend={m.get('backend', '?')}"
    if r.name == "compile" and "max_registers" in m:
        return f"regs={m['max_registers']} smem={m['max_shared_bytes']}B spills={m['spill_instructions']}"
    if r.name == "run" and "call_s" in m:
        return f"call={m['call_s']:.3g}s launches={m.get('launches', 0)}"
    if r.name in ("correct", "scale") and "max_abs_err" in m:
        keys = ("max_abs_err", "max_rel_err", "psnr_db", "cosine")
        return " ".join(f"{k}={_fmt(m[k])}" for k in keys if k in m)
    return ""


def rung_line(r: RungResult) -> Text:
    glyph, colour = STYLE[r.status]
    line = Text()
    line.append(f"  {glyph} ", style=colour)
    line.append(f"{r.name:<9}", style="bold")
    line.append(f"{r.status.value:<8}", style=colour)
    line.append(f"{r.seconds:6.2f}s  ", style="dim")
    fig = figures(r)
    if fig:
        line.append(fig + "  ", style="cyan")
    first, *rest = (r.message or "").splitlines() or [""]
    line.append(first)
    for extra in rest:
        line.append("\n" + " " * 31 + extra)
    return line


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
    style = "bold green" if run.ok else "bold red"
    return Text.assemble(
        ("  verdict: ", "bold"), (run.verdict, style), (f"  ({tally}; {run.wall_s:.1f}s)", "dim")
    )


def print_run(console: Console, run: Run) -> None:
    console.print(header(run))
    for r in run.rungs:
        console.print(rung_line(r))
    console.print(verdict(run))


def history(runs: list[Run]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for col in ("run", "when", "solution", "hash", "backend", "verdict", "max_abs_err", "wall_s"):
        table.add_column(col, justify="right" if col in ("run", "max_abs_err", "wall_s") else "left")
    for run in runs:
        correct = next((r for r in run.rungs if r.name == "correct"), None)
        err = _fmt(correct.metrics["max_abs_err"]) if correct and "max_abs_err" in correct.metrics else ""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started))
        style = "green" if run.ok else "red"
        table.add_row(
            str(run.id),
            when,
            run.solution.path,
            run.solution.sha256[:10],
            run.solution.backend,
            Text(run.verdict, style=style),
            err,
            f"{run.wall_s:.1f}",
        )
    return table


def device(dev: Device) -> Table:
    table = Table(
        title=f"{dev.name} ({dev.arch or dev.kind}, driver {dev.driver or '-'})", header_style="bold"
    )
    for col in ("ceiling", "measured", "datasheet", "measured/datasheet"):
        table.add_column(col, justify="left" if col == "ceiling" else "right")
    sheet = DATASHEET.get(dev.name, {})
    for key, value in dev.ceilings.items():
        if not isinstance(value, (int, float)):
            continue
        ref = sheet.get(key)
        table.add_row(key, f"{value:,.1f}", f"{ref:,.0f}" if ref else "", f"{value / ref:.0%}" if ref else "")
    if not dev.ceilings:
        table.add_row("(no GPU: nothing to measure)", "", "", "")
    return table
