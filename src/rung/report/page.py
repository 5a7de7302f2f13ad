"""The report as one HTML file: the charts inline as SVG, the tables as HTML, styles in the
head; nothing fetched from the network, no script. Artifacts are linked by paths relative to
the page, so a workspace copied elsewhere with its report keeps its links.
"""

from __future__ import annotations

import datetime
import html
import os
import urllib.parse
from pathlib import Path
from typing import Any

from rung import views
from rung.common.stats import geomean, relative_error
from rung.report.gather import ReportData, Version, case_label
from rung.report.intra import IntraTrace
from rung.report.plots import Chart
from rung.spec import Outcome

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { background: #fdecea; } .ok { color: #2e7d32; } .bad { color: #c0392b; font-weight: 600; }
tr.unverified td { background: #fff8e1; } .unverified { color: #9a6700; font-weight: 600; }
.rung { display: inline-block; padding: 0 4px; margin: 1px; border-radius: 3px; font-size: 12px; }
.OK { background: #e3f2e1; } .SKIPPED { background: #eee; color: #666; }
.FAILED, .ERROR, .TIMEOUT, .INTERRUPTED { background: #c0392b; color: #fff; }
figure { margin: 1em 0; } figure svg { width: min(100%, 960px); height: auto; } .note { color: #666; font-size: 13px; }
code { font-size: 12px; } details summary { cursor: pointer; }
"""


def render(
    data: ReportData,
    out: Path,
    versions_chart: Chart | None,
    rooflines: list[tuple[Chart, dict[str, Any]]],
    intra: Chart | None,
) -> str:
    links = _Links(out.parent)
    body = [
        f"<h1>rung report: {_e(data.problem)}</h1>",
        _header(data),
        '<nav><a href="#versions">versions</a> · <a href="#roofline">roofline</a> · <a href="#best">best'
        ' version</a> · <a href="#runs">runs</a> · <a href="#intra">intra-kernel trace</a></nav>',
        '<section id="versions"><h2>Versions over time</h2>',
        _figure(versions_chart) if versions_chart else '<p class="note">no runs: nothing to draw</p>',
        "</section>",
        '<section id="roofline"><h2>Roofline</h2>',
        *(_figure(chart) + _ceilings(ceilings) for chart, ceilings in rooflines),
        ""
        if rooflines
        else '<p class="note">no run recorded a device with measured ceilings (rung device)</p>',
        "</section>",
        '<section id="best"><h2>Best version</h2>',
        _best(data.best, data.best_source),
        "</section>",
        '<section id="runs"><h2>Runs</h2>',
        _runs(data.versions, links, data.workspace / ".rung" / "runs")
        if data.versions
        else f'<p class="note">{_e(_no_runs(data))}</p>',
        "</section>",
        '<section id="intra"><h2>Intra-kernel trace of the best version</h2>',
        _intra(data, intra, links),
        "</section>",
    ]
    title = f"rung report: {data.problem}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


class _Links:
    """An artifact's href relative to the page's folder (absolute where there is no relative path)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()

    def __call__(self, path: str | Path, text: str | None = None) -> str:
        target = Path(path)
        try:
            href = urllib.parse.quote(os.path.relpath(target, self.folder))
        except ValueError:  # another drive (Windows): no relative path
            href = target.resolve().as_uri()
        return f'<a href="{_e(href)}">{_e(text or target.name)}</a>'


def _header(data: ReportData) -> str:
    failed = sum(v.run.outcome == Outcome.FAILED for v in data.versions)
    unverified = sum(v.run.outcome == Outcome.UNVERIFIED for v in data.versions)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    best = f"run {data.best.run.id} ({_e(data.best.run.solution.path)})" if data.best else "none verified"
    devices = ", ".join(_e(d.name) for d in data.devices()) or "none"
    return (
        f"<p>workspace <code>{_e(str(data.workspace))}</code> · written {when}<br>"
        f"{len(data.versions)} versions, {len(data.versions) - failed - unverified} verified, "
        f'<span class="{"bad" if failed else ""}">{failed} failed</span>, {unverified} not verified here'
        f" · best: {best} · devices: {devices}</p>"
    )


def _figure(chart: Chart) -> str:
    note = f'<figcaption class="note">{_e(chart.note)}</figcaption>' if chart.note else ""
    return f'<figure data-chart="{_e(chart.name)}">{chart.svg}{note}</figure>'


def _ceilings(ceilings: dict[str, Any]) -> str:
    # Numbers only: a device record also holds the clocks its matmul ceiling was measured at.
    numbers = {k: v for k, v in ceilings.items() if isinstance(v, (int, float))}
    rows = "".join(f'<tr><td>{_e(k)}</td><td class="num">{v:,.4g}</td></tr>' for k, v in numbers.items())
    return f'<details><summary>measured ceilings</summary><table class="ceilings">{rows}</table></details>'


def _best(best: Version | None, source: str) -> str:
    if best is None:
        return '<p class="note">none: no version passed</p>'
    roof = {case_label(c["case"]): c for c in best.roofline}
    spread = {case_label(c["case"]): c for c in views.bench_cases(best.run)}
    head = [
        "case",
        "median ms",
        "p20–p80 ms",
        "± median",
        "x reference",
        "x parent",
        "% of roofline",
        "bound",
    ]
    rows = []
    for c in best.row["cases"]:
        label = case_label(c["case"])
        b, r = spread.get(label, {}), roof.get(label, {})
        cells = [
            _ms(c.get("median_ms")),
            f"{_ms(b.get('p20_ms'))}–{_ms(b.get('p80_ms'))}" if "p20_ms" in b else "",
            f"{relative_error(b):.1%}" if "median_ms" in b else "",
            _times(c.get("speedup_vs_reference")),
            _times(c.get("speedup_vs_parent")),
            f"{c['pct_of_roofline']:.0%}" if c.get("pct_of_roofline") else "",
            _e(str(r.get("bound", ""))),
        ]
        rows.append(
            f"<tr><td>{_e(label)}</td>" + "".join(f'<td class="num">{x}</td>' for x in cells) + "</tr>"
        )
    table = (
        '<table class="best"><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else '<p class="note">not timed (bench needs a GPU)</p>'
    )
    return (
        f'<p>run <a href="#run-{best.run.id}">{best.run.id}</a>: {_e(best.run.solution.path)} '
        f"({_e(best.run.solution.backend)})</p>"
        + table
        + f"<details><summary>source</summary><pre>{_e(source)}</pre></details>"
    )


def _runs(versions: list[Version], links: _Links, runs_root: Path) -> str:
    head = [
        "run",
        "version",
        "parent",
        "verdict",
        "median ms (geomean)",
        "x reference",
        "% of roofline",
        "rungs",
        "artifacts",
    ]
    rows = [_run_row(v, links, runs_root) for v in versions]
    return (
        '<table class="runs"><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr>"
        + "".join(rows)
        + "</table>"
    )


def _run_row(v: Version, links: _Links, runs_root: Path) -> str:
    run, row = v.run, v.row
    unverified = run.outcome == Outcome.UNVERIFIED  # not wrong: never compared with the reference here
    verdict = (
        f'<span class="{"ok" if run.ok else "unverified" if unverified else "bad"}">{_e(run.verdict)}</span>'
    )
    if row["why"]:
        verdict += f'<br><span class="note">{_e(row["why"][:160])}</span>'
    medians = [c["median_ms"] for c in row["cases"] if c.get("median_ms")]
    rungs = "".join(
        f'<span class="rung {r.status.value}" title="{_e(r.message[:500])}">{_e(r.name)}</span>'
        for r in run.rungs
    )
    folder = runs_root / str(run.id)
    artifacts = [a for r in run.rungs for a in r.artifacts]
    files = "".join(f"<li>{links(a)}</li>" for a in artifacts)
    listed = (
        f"<details><summary>{len(artifacts)} files</summary><ul>{files}</ul></details>" if artifacts else ""
    )
    parent = f'<a href="#run-{row["parent_run"]}">{row["parent_run"]}</a>' if row["parent_run"] else ""
    cells = [
        f"{run.id}",
        f"{_e(run.solution.path)}<br><code>{run.solution.sha256[:10]}</code> {_e(run.solution.backend)}",
        parent,
        verdict,
        _ms(geomean(medians)) if medians else "",
        _times(row.get("speedup_vs_reference")),
        f"{row['pct_of_roofline']:.0%}" if row.get("pct_of_roofline") else "",
        rungs,
        f"{links(folder, 'folder')} · {links(folder / 'result.json')}{listed}",
    ]
    row_class = "passed" if run.ok else "unverified" if unverified else "failed"
    tr = f'<tr id="run-{run.id}" class="run {row_class}" data-run="{run.id}">'
    return tr + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _intra(data: ReportData, chart: Chart | None, links: _Links) -> str:
    if data.best is None:
        return '<p class="note">none: no version passed</p>'
    trace: IntraTrace | None = data.intra
    if trace is None:
        return f'<p class="note">none: run {data.best.run.id} kept no intra-kernel (proton) trace</p>'
    if chart is None:
        return f'<p class="note">{links(trace.path)}: not drawn, {_e(trace.why_not_drawn)}</p>'
    rows = "".join(
        f'<tr><td>{_e(k["kernel"])}</td><td>{_e(r["scope"])}</td><td class="num">{r["share"]:.0%}</td>'
        f'<td class="num">{r["cycles_per_warp"]:,.0f}</td><td>{_e(_by_group(r))}</td></tr>'
        for k in trace.kernels
        for r in k["scopes"]
    )
    head = (
        "<tr><th>kernel</th><th>scope</th><th>share</th><th>cycles per warp</th><th>by warp group</th></tr>"
    )
    table = f'<table class="scopes">{head}{rows}</table>'
    return f"<p>{links(trace.path)}</p>" + _figure(chart) + table


def _by_group(row: dict[str, Any]) -> str:
    groups = row.get("cycles_per_warp_by_group", {})
    return ", ".join(f"wg{g} {c:,.0f}" for g, c in groups.items()) if len(groups) > 1 else ""


def _no_runs(data: ReportData) -> str:
    return f"no runs of {data.problem} in {data.workspace}"


def _ms(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) and value else ""


def _times(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) and value else ""


def _e(text: str) -> str:
    return html.escape(text, quote=True)
