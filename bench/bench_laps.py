"""Where a check's bench time goes, case by case, from `rung check --json` outputs.

    python3 bench/bench_laps.py CHECK.json [CHECK.json ...]

For each check: the rungs' seconds, then one row per benchmark case from bench's own laps
(`wall_s`): the judge's inputs, references and first-set check (`check`), the solution
process's timing request (`solution`: its events and CUPTI passes beside it), the checks of the
timed calls' outputs (`timed_checks`), the reference's timing or the kept one (`reference`), the
baseline where timed, and the case's input sets and median. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

LAPS = ("check", "solution", "timed_checks", "reference", "baseline")


def rows(check: dict[str, Any]) -> list[str]:
    solution = check["solutions"][0]
    rungs = {r["name"]: r for r in solution["rungs"]}
    said = ", ".join(f"{n} {r.get('seconds') or 0:.2f}" for n, r in rungs.items() if r.get("seconds"))
    out = [f"rungs (s): {said}", ""]
    metrics = rungs.get("bench", {}).get("metrics", {})
    bench = metrics.get("cases") or metrics.get("measured_before", [])  # a bench cut short keeps these
    if not bench:
        return [*out, "no bench cases", ""]
    out += [
        "| case | sets | median us | " + " | ".join(LAPS) + " | events | cupti | sum |",
        "|---|---:|---:|" + "---:|" * (len(LAPS) + 3),
    ]
    for c in bench:
        wall = c.get("wall_s", {})
        inner = wall.get("in_solution_process", {})
        laps = [float(wall.get(k, 0.0)) for k in LAPS]
        cells = [f"{v:.2f}" for v in laps]
        cells += [f"{float(inner.get('events', 0.0)):.2f}", f"{float(inner.get('cupti', 0.0)):.2f}"]
        out.append(
            f"| {json.dumps(c['case'])} | {c.get('input_sets', '')} | {c.get('median_ms', 0) * 1e3:.1f} | "
            + " | ".join(cells)
            + f" | {sum(laps):.2f} |"
        )
    return [*out, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checks", nargs="+", type=Path)
    args = ap.parse_args()
    for path in args.checks:
        print(f"## {path.name}\n")
        try:
            check = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"unreadable: {e}\n")
            continue
        print("\n".join(rows(check)))


if __name__ == "__main__":
    main()
