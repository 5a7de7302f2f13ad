"""scopes: where a kernel's cycles go inside it, from proton's intra-kernel trace (pure).

Proton's instrumentation writes a Chrome trace (`.chrome_trace`): one complete event per scope
executed by each warp of each CTA, named by the scope, in the kernel's category (`cat`), its
`pid` naming the kernel, SM and CTA ("softmax_kernel Core12 CTA345"), its `tid` the warp
("warp 3 (line 0)"), and its times in cycles read as nanoseconds (proton assumes 1 GHz: `dur` in
microseconds is cycles / 1000). Per kernel and scope: cycles per warp (mean over the warps that
ran it) in each warp group (4 warps, Hopper's unit of wgmma), and the scope's share of the
cycles between each warp's first and last mark. The text is a few lines an agent can read; it names warp groups apart where they differ
(a warp-specialised kernel's producer and consumers).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

WARP = re.compile(r"^warp (\d+)")
CTA = re.compile(r"CTA(\d+)$")
WARPS_PER_GROUP = 4
SCOPES_SHOWN = 6
GROUPS_DIFFER = 1.05  # warp groups named apart where one spends 5% more cycles in a scope


def summarize(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kernel, longest first: warps and CTAs traced, mean cycles per warp from its first to
    its last mark, and per scope (largest share first) its cycles per warp by warp group."""
    per_scope: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    spans: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(dict)
    for e in events:
        warp = WARP.match(str(e.get("tid", "")))
        if e.get("ph") != "X" or warp is None or "dur" not in e:
            continue
        kernel, scope, w = str(e.get("cat", "?")), str(e.get("name", "?")), int(warp.group(1))
        start, cycles = float(e["ts"]) * 1e3, float(e["dur"]) * 1e3
        per_scope[kernel][scope][w // WARPS_PER_GROUP].append(cycles)
        key = (str(e.get("pid", "")), w)
        first, last = spans[kernel].get(key, [start, start + cycles])
        spans[kernel][key] = [min(first, start), max(last, start + cycles)]
    kernels = []
    for kernel, scopes in per_scope.items():
        warp_spans = [last - first for first, last in spans[kernel].values()]
        total = sum(warp_spans)
        rows: list[dict[str, Any]] = []
        for scope, groups in scopes.items():
            cycles = sum(sum(v) for v in groups.values())
            rows.append(
                {
                    "scope": scope,
                    "cycles_per_warp": cycles / sum(len(v) for v in groups.values()),
                    "share": cycles / total if total else 0.0,
                    "cycles_per_warp_by_group": {g: sum(v) / len(v) for g, v in sorted(groups.items())},
                }
            )
        ctas = {m.group(1) for pid, _ in spans[kernel] if (m := CTA.search(pid))}
        kernels.append(
            {
                "kernel": kernel,
                "ctas": len(ctas),
                "warps": len(spans[kernel]),
                "cycles_per_warp": total / len(warp_spans),
                "scopes": sorted(rows, key=lambda r: -r["share"]),
            }
        )
    return sorted(kernels, key=lambda k: -k["cycles_per_warp"] * k["warps"])


def lines(kernels: list[dict[str, Any]]) -> list[str]:
    """Where the cycles go, a few lines per kernel."""
    out = []
    for k in kernels:
        out.append(
            f"{k['kernel'][:60]}: {k['ctas']} CTA(s), {k['warps']} warp(s) traced; "
            f"{k['cycles_per_warp']:,.0f} cycles per warp from first to last mark"
        )
        for row in k["scopes"][:SCOPES_SHOWN]:
            groups = row["cycles_per_warp_by_group"]
            uneven = len(groups) > 1 and max(groups.values()) > GROUPS_DIFFER * min(groups.values())
            by_group = (
                "; by warp group " + ", ".join(f"wg{g} {c:,.0f}" for g, c in groups.items()) if uneven else ""
            )
            out.append(
                f"  {row['scope']}: {row['share']:.0%}, {row['cycles_per_warp']:,.0f} cycles per warp{by_group}"
            )
        if len(k["scopes"]) > SCOPES_SHOWN:
            out.append(f"  ... {len(k['scopes']) - SCOPES_SHOWN} more scope(s) in the figures")
    return out
