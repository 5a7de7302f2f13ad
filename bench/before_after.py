"""Before and after a change to rung itself, in one process on one GPU: the same solutions
climbed by an older rung (its src/ folder carried beside this checkout) and by this one,
interleaved, with each climb's wall time (a cold process: the time to a verdict).

    python3 bench/before_after.py --old .old/src --out results/before_after.json

Every example with a tuned version, unless --problems names some. Writes per problem, per case:
the headline median, percent of roofline and the climb's wall time, old and new, and the
relative differences; and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUNED = tuple(
    sorted(p.parent.parent.parent.name for p in (ROOT / "problems").glob("*/solutions/correct/tuned.py"))
)


def climb(src: Path, problem: str, workspace: Path) -> tuple[dict, float]:
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "RUNG_WORKSPACE": str(workspace),
        "RUNG_BASELINE": "none",
        "RUNG_SKIP": "profile",
    }
    folder = ROOT / "problems" / problem
    began = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rung",
            "check",
            str(folder),
            str(folder / "solutions" / "correct" / "tuned.py"),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - began
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": (done.stdout + done.stderr)[-2000:]}, wall
    return data, wall


def time_to_verdict(run: dict) -> float:
    """The seconds of every rung from load through roofline but compile (its build overlaps
    nothing in a warm loop), as docs/BENCHMARKS.md has reported time to verdict."""
    return sum(r["seconds"] for r in run.get("rungs", []) if r["name"] not in ("compile", "profile"))


def case_walls(run: dict) -> list[dict]:
    """Where each bench case's wall time went."""
    bench = next((r for r in run.get("rungs", []) if r["name"] == "bench"), {})
    return [c.get("wall_s", {}) for c in bench.get("metrics", {}).get("cases", [])]


def figures(run: dict) -> list[dict]:
    rungs = {r["name"]: r for r in run.get("rungs", [])}
    roof = {str(c["case"]): c for c in rungs.get("roofline", {}).get("metrics", {}).get("cases", [])}
    out = []
    for c in rungs.get("bench", {}).get("metrics", {}).get("cases", []):
        out.append(
            {
                "case": str(c["case"]),
                "median_us": c["median_ms"] * 1e3,
                "pct_of_roofline": roof.get(str(c["case"]), {}).get("pct_of_roofline"),
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--problems", nargs="*", default=TUNED, help="default: every example with a tuned version"
    )
    args = ap.parse_args()
    rows: list[dict] = []
    for round_no in range(args.rounds):
        for problem in args.problems:
            for side, src in (("old", args.old.resolve()), ("new", ROOT / "src")):
                data, wall = climb(src, problem, Path(f"/tmp/before-after-{side}"))
                run = (data.get("solutions") or [data])[0]
                rows.append(
                    {
                        "round": round_no,
                        "problem": problem,
                        "side": side,
                        "wall_s": wall,
                        "ttv_s": time_to_verdict(run),
                        "verdict": run.get("verdict", data.get("error", "?")),
                        "cases": figures(run),
                        "walls": case_walls(run),
                    }
                )
                print(f"{problem} {side} round {round_no}: {rows[-1]['verdict']} in {wall:.2f} s", flush=True)
                args.out.write_text(json.dumps(rows, indent=1))  # a run cut short keeps what finished
    print("\n| problem | case | old us | new us | diff | old % roof | new % roof |")
    print("|---|---|---|---|---|---|---|")
    last = args.rounds - 1
    for problem in args.problems:
        pick = {r["side"]: r for r in rows if r["problem"] == problem and r["round"] == last}
        for o, n in zip(pick["old"]["cases"], pick["new"]["cases"], strict=False):
            diff = (n["median_us"] - o["median_us"]) / o["median_us"]
            print(
                f"| {problem} | {o['case']} | {o['median_us']:.1f} | {n['median_us']:.1f} | {diff:+.2%} | "
                f"{o['pct_of_roofline'] or 0:.1%} | {n['pct_of_roofline'] or 0:.1%} |"
            )
    print("\n| problem | side | time to verdict s per round | wall s of `rung check` per round |")
    print("|---|---|---|---|")
    for problem in args.problems:
        for side in ("old", "new"):
            mine = [r for r in rows if r["problem"] == problem and r["side"] == side]
            ttv = ", ".join(f"{r['ttv_s']:.2f}" for r in mine)
            wall = ", ".join(f"{r['wall_s']:.2f}" for r in mine)
            print(f"| {problem} | {side} | {ttv} | {wall} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
