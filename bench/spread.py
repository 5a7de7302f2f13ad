"""One kernel, one number: the same solution checked five times, each `rung check` a fresh process,
and how far its per-case figures move (GPU only).

    python3 bench/spread.py --out DIR [--runs 5] [--only NAME,...]

The entries cover what a single steady kernel does not: a call of two kernels (bench/spread's
split-K matvec), a pipeline of torch ops, GPU MODE's CUDA-inline vector add and its sort (small
kernels that read ±86% and ±163% under GPU MODE's own timer), and the tuned softmax as the single
kernel of 20 us or more. The GPU MODE entries need .problem-sets (bash bench/fetch_problem_sets.sh).
Each GPU MODE entry is also checked with RUNG_BENCH_SETS=1, the same inputs every call as GPU MODE's
benchmark mode calls it, beside rung's default of input sets taken in turn (its leaderboard mode
draws fresh inputs every call): the figure must not depend on which.

Per entry, style and case: the five runs' headline medians (bench's CUPTI span of a call), their
spread (max - min) / median, the kernels a call launched, the idle gap inside a call (span minus
busy time), the spread of the busy time alone (where the span moves and the busy time does not,
the idle time between kernels is what moved), and bench's own words for its method. Targets:
within 2% over five runs for a call of 20 us or more; under 10 us, within 2% over the runs and
between the two styles. Writes spread.json
and spread.md to --out after every run. rung runs with RUNG_BASELINE=none, RUNG_SKIP=profile and
RUNG_TRIALS=1 unless set (none of them touches bench's timing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity_runner import RUNG_DEFAULTS, rung_env

ROOT = Path(__file__).resolve().parents[1]
PMPP = ROOT / ".problem-sets" / "gpumode" / "pmpp_v2"
DEFAULTS = {**RUNG_DEFAULTS, "RUNG_TRIALS": "1"}
STYLES = {"in turn": {}, "same inputs": {"RUNG_BENCH_SETS": "1"}}
LONG_US, SHORT_US, TARGET = 20.0, 10.0, 0.02


@dataclass
class Entry:
    name: str
    problem: Path
    solution: Path
    styles: tuple[str, ...] = ("in turn",)
    runs: list[dict[str, Any]] = field(default_factory=list)


def entries() -> list[Entry]:
    spread = ROOT / "bench" / "spread" / "matvec"
    both = tuple(STYLES)
    return [
        Entry("matvec split-K (2 kernels)", spread, spread / "solutions/split_k.py"),
        Entry("matvec torch ops", spread, spread / "solutions/torch_ops.py"),
        Entry(
            "vectoradd CUDA inline",
            PMPP / "vectoradd_py",
            PMPP / "vectoradd_py/solutions/correct/submission_cuda_inline.py",
            both,
        ),
        Entry("sort", PMPP / "sort_py", PMPP / "sort_py/submission.py", both),
        Entry(
            "softmax tuned", ROOT / "problems/softmax", ROOT / "problems/softmax/solutions/correct/tuned.py"
        ),
    ]


def check(entry: Entry, style: str, workspace: Path, cache: Path) -> dict[str, Any]:
    """One `rung check` of the entry in a fresh process: per bench case, the figures compared."""
    env = {**DEFAULTS, **rung_env(workspace, cache), **STYLES[style]}
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(entry.problem), str(entry.solution), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    run: dict[str, Any] = {"style": style, "wall_s": round(time.perf_counter() - began, 2)}
    try:
        solution = json.loads(done.stdout)["solutions"][0]
    except (ValueError, KeyError, IndexError):
        return {**run, "error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    run["verdict"] = solution["verdict"]
    bad = next((r for r in solution["rungs"] if r["status"] in ("FAILED", "ERROR", "TIMEOUT")), None)
    if bad:
        run["reason"] = f"{bad['name']}: {' '.join(bad['message'].split())[:400]}"
    bench: dict[str, Any] = next((r for r in solution["rungs"] if r["name"] == "bench"), {})
    run["cases"] = [case_figures(c) for c in bench.get("metrics", {}).get("cases", [])]
    return run


def case_figures(c: dict[str, Any]) -> dict[str, Any]:
    graph = c.get("graph", {})
    return {
        "case": json.dumps(c["case"], sort_keys=True),
        "median_us": c["median_ms"] * 1e3,
        "kernels_per_call": c.get("kernels_per_call"),
        "gap_us": c["gap_ms"] * 1e3 if "gap_ms" in c else None,
        "graph_us": graph["median_ms"] * 1e3 if "median_ms" in graph else None,
        "method": c.get("method", c.get("timing", "")),
        "per_set_us": [m * 1e3 for m in c.get("per_set_median_ms", [])],  # each input set's median
    }


def said(run: dict[str, Any]) -> str:
    """One run in a line for the log, its figures included, so the log alone keeps them where the
    JSON is lost: verdict, then per case its median and its input sets' range."""
    words = [run.get("verdict", run.get("error", "no verdict"))]
    for c in run.get("cases", []):
        sets = c.get("per_set_us", [])
        ranged = f" (sets {min(sets):.1f}-{max(sets):.1f})" if len(sets) > 1 else ""
        words.append(f"{c['case']} {c['median_us']:.1f} us{ranged}")
    if "reason" in run:
        words.append(run["reason"][:200])
    return "; ".join(words)


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def rows(entry: Entry) -> list[dict[str, Any]]:
    """Per style and case: the runs' medians, their spread and whether it meets its target."""
    out = []
    for style in entry.styles:
        runs = [r for r in entry.runs if r["style"] == style and r.get("cases")]
        for i, first in enumerate(runs[0]["cases"] if runs else []):
            medians = [r["cases"][i]["median_us"] for r in runs if len(r["cases"]) > i]
            mid = statistics.median(medians)
            gaps = [g for r in runs if len(r["cases"]) > i and (g := r["cases"][i]["gap_us"]) is not None]
            busy = [m - g for m, g in zip(medians, gaps, strict=True)] if len(gaps) == len(medians) else []
            out.append(
                {
                    "style": style,
                    "case": first["case"],
                    "runs": len(medians),
                    "medians_us": [round(m, 3) for m in medians],
                    "median_us": mid,
                    "spread": spread(medians),
                    "kernels_per_call": first["kernels_per_call"],
                    "gap_us": statistics.median(gaps) if gaps else None,
                    "busy_spread": spread(busy) if busy and min(busy) > 0 else None,
                    "method": first["method"],
                    "target": "2% over runs"
                    if mid >= LONG_US
                    else ("2% over runs and styles" if mid < SHORT_US else ""),
                }
            )
    return out


def between_styles(found: list[dict[str, Any]]) -> dict[str, float]:
    """Per case with both styles: |same - in turn| / in turn, of the runs' medians."""
    by = {(r["style"], r["case"]): r["median_us"] for r in found}
    return {
        case: abs(by[("same inputs", case)] - mid) / mid
        for (style, case), mid in by.items()
        if style == "in turn" and ("same inputs", case) in by
    }


def markdown(all_entries: list[Entry], runs: int) -> str:
    lines = [
        "# Spread: five `rung check`s of one solution, each a fresh process",
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {runs} runs an entry and style; "
        + "; ".join(
            f"`{k}={v}`"
            for k, v in {**DEFAULTS, **{k: v for k, v in os.environ.items() if k in DEFAULTS}}.items()
        )
        + ".",
        "",
        "| entry | inputs | case | kernels a call | median us | runs | spread | gap us | busy spread "
        "| between styles | target |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    methods: dict[str, None] = {}
    for e in all_entries:
        found = rows(e)
        styles = between_styles(found)
        for r in found:
            methods[r["method"]] = None
            apart = styles.get(r["case"]) if r["style"] == "in turn" else None
            met = r["spread"] <= TARGET and (apart is None or r["median_us"] >= SHORT_US or apart <= TARGET)
            verdict = f"{r['target']}: {'met' if met else 'NOT met'}" if r["target"] else ""
            lines.append(
                f"| {e.name} | {r['style']} | `{r['case']}` | {r['kernels_per_call']} | {r['median_us']:.2f} "
                f"| {r['runs']} | {r['spread'] * 100:.2f}% | {_us(r['gap_us'])} | {_pct(r['busy_spread'])} "
                f"| {_pct(apart)} | {verdict} |"
            )
        errors = [r["error"] for r in e.runs if "error" in r] + [
            f"{r['verdict']} ({r.get('reason', '')})" for r in e.runs if r.get("verdict", "PASS") != "PASS"
        ]
        if errors:
            lines.append(
                f"| {e.name} | | runs that gave no figure: {'; '.join(errors)[:300]} | | | | | | | | |"
            )
    lines += ["", "Methods, in bench's words:", "", *(f"- {m}" for m in methods), ""]
    return "\n".join(lines)


def _us(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.2f}%"


def write(out: Path, all_entries: list[Entry], runs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = [
        {"entry": e.name, "solution": str(e.solution.relative_to(ROOT)), "runs": e.runs, "rows": rows(e)}
        for e in all_entries
    ]
    (out / "spread.json").write_text(json.dumps(doc, indent=1))
    (out / "spread.md").write_text(markdown(all_entries, runs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated entry names (a prefix is enough)")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=0.0,
        help="start no check after this much wall time (0: no limit)",
    )
    args = ap.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    chosen = [e for e in entries() if not wanted or any(e.name.startswith(w) for w in wanted)]
    missing = [e for e in chosen if not e.solution.is_file()]
    if missing:
        print(
            f"missing: {', '.join(str(e.solution) for e in missing)} (bash bench/fetch_problem_sets.sh)",
            file=sys.stderr,
        )
        return 2
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="spread-") as tmp:
        cache = Path(tmp) / "cache"  # the device's ceilings measured once, for every entry
        for n, e in enumerate(chosen):
            workspace = Path(tmp) / f"ws{n}"
            workspace.mkdir()
            for style in e.styles:
                for _ in range(args.runs):
                    if args.max_seconds and time.monotonic() - began > args.max_seconds:
                        print("stopped: --max-seconds spent", flush=True)
                        print((args.out / "spread.md").read_text())
                        return 0
                    e.runs.append(check(e, style, workspace, cache))
                    write(args.out, chosen, args.runs)
                    print(f"{e.name} ({style}): run {len(e.runs)} {said(e.runs[-1])}", flush=True)
    print((args.out / "spread.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
