"""`rung report`: one static HTML page per problem, read from the store: versions over time,
a roofline chart per device, the best version's cases, every run's rungs and artifacts, the
best version's intra-kernel trace. `gather` reads, `plots` draws, `page` writes the HTML.

Read-only like `rung history`: the workspace must already hold `.rung/`; the one file written
is the page (by default `.rung/report/<problem>.html`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rung.errors import UsageError
from rung.problem_data import problem_name

try:
    import matplotlib  # noqa: F401  (an extra: say which, rather than fail on an import deep inside)
except ModuleNotFoundError:
    raise UsageError("rung report draws its charts with matplotlib: pip install -e '.[report]'") from None

from rung.report import page, plots
from rung.report.gather import gather
from rung.spec import SCHEMA


def write(workspace: Path, problem: str | Path | None, out: Path | None = None) -> dict[str, Any]:
    """Write the report of `problem` (a folder or a name, as `rung history` takes it; None: the
    latest run's problem) in `workspace`, which must already hold .rung/, to `out`; what was
    written, as the `--json` document."""
    data = gather(workspace, None if problem is None else problem_name(problem))
    out = (out or workspace / ".rung" / "report" / f"{data.problem}.html").resolve()
    versions = plots.versions_chart(data.versions) if data.versions else None
    rooflines = [
        (plots.roofline_chart(d, data.versions), dict(d.ceilings))
        for d in data.devices()
        if "dram_gbps" in d.ceilings
    ]
    intra = plots.intra_chart(data.intra) if data.intra and not data.intra.why_not_drawn else None
    html = page.render(data, out, versions, rooflines, intra)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    charts = [c for c in (versions, *(r for r, _ in rooflines), intra) if c is not None]
    return {
        "schema": SCHEMA,
        "problem": data.problem,
        "workspace": str(workspace),
        "out": str(out),
        "bytes": len(html.encode()),
        "runs": [
            {
                "run": v.run.id,
                "ok": v.run.ok,
                "outcome": v.run.outcome.value,
                "verdict": v.run.verdict,
                "timed": v.timed,
            }
            for v in data.versions
        ],
        "best_run": data.best.run.id if data.best else None,
        "charts": [{"name": c.name, "runs": c.runs, "note": c.note} for c in charts],
        "intra_kernel": (
            {
                "path": data.intra.path,
                "kernels": [k["kernel"] for k in data.intra.kernels],
                "why_not_drawn": data.intra.why_not_drawn,
            }
            if data.intra
            else None
        ),
    }
