"""The report's charts, drawn with matplotlib and kept as SVG text to inline in the page (so it
needs no network and no file beside it).

Each version's marks are one SVG group with an id (`version-<run>` on the versions chart,
`point-<run>` on a roofline), so a reader (and the browser test) can find every version on a
chart. Text stays text (`svg.fonttype: none`): smaller than glyph outlines and searchable.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import matplotlib
from matplotlib.figure import Figure

from rung.report.gather import Version, case_label
from rung.report.intra import IntraTrace
from rung.spec import Device

FAILED = "#c0392b"
PASSED = "#2e7d32"
UNTIMED = "#9e9e9e"


@dataclass
class Chart:
    name: str
    svg: str
    runs: list[int] = field(default_factory=list)  # the versions drawn as points
    note: str = ""  # what the chart leaves out, and why


def versions_chart(versions: list[Version]) -> Chart:
    """Top: each case's median per version (log scale); a version with no timing sits on the
    axis, a cross where it failed. Bottom: percent of roofline (geometric mean over the cases).
    A failed version's column is shaded red on both."""
    fig = Figure(figsize=(max(6.5, 0.45 * len(versions) + 3), 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    labels = _case_labels(versions)
    colors = {c: f"C{i % 10}" for i, c in enumerate(labels)}
    for label in labels:  # a line through the versions that timed the case, over any gap
        xy = [(x, y) for x, v in enumerate(versions) if (y := _median(v, label))]
        top.plot([x for x, _ in xy], [y for _, y in xy], color=colors[label], lw=1, label=label)
    for x, v in enumerate(versions):
        if not v.run.ok:
            for ax in (top, bottom):
                ax.axvspan(x - 0.45, x + 0.45, color=FAILED, alpha=0.12, lw=0)
        timed = [(label, y) for label in labels if (y := _median(v, label))]
        if timed:
            top.scatter(
                [x] * len(timed),
                [y for _, y in timed],
                c=[colors[label] for label, _ in timed] if v.run.ok else "none",
                edgecolors=[colors[label] for label, _ in timed] if v.run.ok else FAILED,
                marker="o",
                s=28,
                zorder=3,
                gid=f"version-{v.run.id}",
            )
        else:
            top.scatter(
                [x],
                [0.04],
                transform=top.get_xaxis_transform(),
                marker="x" if not v.run.ok else "o",
                c=FAILED if not v.run.ok else UNTIMED,
                s=40,
                zorder=3,
                gid=f"version-{v.run.id}",
            )
        pct = v.row.get("pct_of_roofline")
        if pct:
            bottom.bar(x, 100 * pct, color=PASSED if v.run.ok else FAILED, width=0.6)
    if any(v.timed for v in versions):
        top.set_yscale("log")
        top.legend(fontsize=7, loc="upper right", title="case", title_fontsize=7)
    else:
        top.text(0.5, 0.5, "no version was timed (bench needs a GPU)", transform=top.transAxes, ha="center")
        top.set_yticks([])  # no scale to read: every mark sits on the axis
    bottom.set_ylim(0, max(100, *(100 * (v.row.get("pct_of_roofline") or 0) for v in versions)) * 1.05)
    top.set_xlim(-0.5, len(versions) - 0.5)
    top.set_ylabel("median ms")
    target = _target(versions)
    bottom.axhline(100 * target, color="k", ls=":", lw=1)
    bottom.text(0, 100 * target, f" target {target:.0%}", va="bottom", fontsize=7)
    bottom.set_ylabel("% of roofline")
    bottom.set_xticks(range(len(versions)), [str(v.run.id) for v in versions])
    for tick, v in zip(bottom.get_xticklabels(), versions, strict=True):
        tick.set_color(PASSED if v.run.ok else FAILED)
    bottom.set_xlabel("run (red: failed)")
    devices = {v.run.device.name for v in versions}
    note = (
        "runs on several devices (" + "; ".join(_runs_on(versions, d) for d in sorted(devices)) + "): "
        "a time is comparable only with times on its own device"
        if len(devices) > 1
        else ""
    )
    return Chart("versions", _svg(fig), [v.run.id for v in versions], note)


def roofline_chart(device: Device, versions: list[Version]) -> Chart:
    """Attained TFLOP/s against arithmetic intensity for each case of each version timed on
    `device`, under its measured DRAM roof and each measured compute ceiling."""
    ceilings = {k: float(v) for k, v in device.ceilings.items() if isinstance(v, (int, float))}
    drawn = [v for v in versions if v.run.device.name == device.name and _points(v)]
    left_out = [v for v in versions if v not in drawn]
    fig = Figure(figsize=(7, 4.8), layout="constrained")
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    intensities = [x for v in drawn for x, _ in _points(v)] or [1.0]
    roofs = {k.removesuffix("_tflops"): t for k, t in ceilings.items() if k.endswith("_tflops")}
    ridges = [t * 1e12 / (ceilings["dram_gbps"] * 1e9) for t in roofs.values()]
    lo, hi = min(intensities) / 4, max([*intensities, *ridges]) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.text(
        lo,
        ceilings["dram_gbps"] * lo / 1e3,
        f" DRAM {ceilings['dram_gbps']:.0f} GB/s",
        fontsize=7,
        va="bottom",
    )
    for i, (name, tflops) in enumerate(sorted(roofs.items(), key=lambda t: -t[1])):
        roof = [min(tflops, ceilings["dram_gbps"] * x / 1e3) for x in xs]
        ax.plot(
            xs,
            roof,
            color="k",
            lw=1.2 if i == 0 else 0.8,
            ls="-" if i == 0 else "--",
            alpha=1 if i == 0 else 0.6,
        )
        ax.text(hi, tflops, f"{name} {tflops:.0f} TFLOP/s ", fontsize=7, ha="right", va="bottom")
    cmap = matplotlib.colormaps["viridis"]
    for i, v in enumerate(drawn):
        pts = _points(v)
        color = cmap(i / max(len(drawn) - 1, 1))
        ax.scatter(
            [x for x, _ in pts],
            [y for _, y in pts],
            s=30,
            zorder=3,
            gid=f"point-{v.run.id}",
            c=[color] * len(pts) if v.run.ok else "none",
            edgecolors=[color] * len(pts) if v.run.ok else FAILED,
            marker="o" if v.run.ok else "X",
        )
        for x, y in pts:
            ax.annotate(str(v.run.id), (x, y), xytext=(3, 3), textcoords="offset points", fontsize=6)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, from the cost model)")
    ax.set_ylabel("attained TFLOP/s")
    ax.set_title(f"{device.name}: measured ceilings", fontsize=9)
    note = "; ".join(f"run {v.run.id} ({v.row['verdict']}{_why_not_drawn(v, device)})" for v in left_out)
    return Chart(
        f"roofline {device.name}", _svg(fig), [v.run.id for v in drawn], note and f"not drawn: {note}"
    )


def intra_chart(trace: IntraTrace) -> Chart:
    """Left: each kernel's scopes, cycles per warp. Right: the first lanes (CTA and warp) on a
    timeline, each scope a bar in its colour."""
    rows = [(f"{k['kernel'][:24]}: {r['scope']}", r) for k in trace.kernels for r in k["scopes"]]
    colors = {n: f"C{i % 10}" for i, n in enumerate(dict.fromkeys(r["scope"] for _, r in rows))}
    fig = Figure(figsize=(10, max(2.6, 0.22 * max(len(trace.lanes), len(rows)) + 1.2)), layout="constrained")
    per_warp, timeline = fig.subplots(1, 2, width_ratios=[1, 2])
    per_warp.barh(
        [label for label, _ in rows],
        [r["cycles_per_warp"] for _, r in rows],
        color=[colors[r["scope"]] for _, r in rows],
        gid="scopes",
    )
    per_warp.invert_yaxis()
    per_warp.tick_params(axis="y", labelsize=7)
    per_warp.set_xlabel("cycles per warp")
    for row, (_, events) in enumerate(trace.lanes):
        for name, start, cycles in events:
            timeline.broken_barh([(start, cycles)], (row - 0.4, 0.8), color=colors.get(name, UNTIMED))
    timeline.set_yticks(range(len(trace.lanes)), [lane for lane, _ in trace.lanes], fontsize=6)
    timeline.invert_yaxis()
    timeline.set_xlabel("cycles from the first mark")
    return Chart("intra-kernel", _svg(fig))


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # inline: no XML declaration or doctype


def _runs_on(versions: list[Version], device: str) -> str:
    return f"{device}: runs " + ", ".join(str(v.run.id) for v in versions if v.run.device.name == device)


def _case_labels(versions: list[Version]) -> list[str]:
    return list(dict.fromkeys(case_label(c["case"]) for v in versions for c in v.row["cases"]))


def _median(v: Version, label: str) -> float | None:
    return next((c.get("median_ms") for c in v.row["cases"] if case_label(c["case"]) == label), None)


def _target(versions: list[Version]) -> float:
    for v in versions:
        roof = v.run.rung("roofline")
        if roof and "target" in roof.metrics:
            return float(roof.metrics["target"])
    return 0.9


def _points(v: Version) -> list[tuple[float, float]]:
    """(FLOP per byte, TFLOP/s) of each case with FLOPs, bytes and a time."""
    return [
        (c["flops"] / c["bytes"], c["flops"] / (c["measured_ms"] * 1e-3) / 1e12)
        for c in v.roofline
        if c["flops"] > 0 and c["bytes"] > 0 and c["measured_ms"]
    ]


def _why_not_drawn(v: Version, device: Device) -> str:
    if v.run.device.name != device.name:
        return f": timed on {v.run.device.name}"
    if v.roofline:
        return ": its cases have no FLOPs to place"
    return ": no roofline figures"
