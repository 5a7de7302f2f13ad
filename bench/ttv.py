"""Time to verdict of one solution, climb after climb, with and without kept reference timings.

Each variant climbs `rung check PROBLEM SOLUTION --json` several times in one workspace and one
cache folder (the first climb of the first variant starts both empty), profile skipped. The
figure is the issue's: seconds of the rungs from load through roofline, compile excluded (a
build is cached after the first climb), beside the process's own wall time. Variants:

  kept      RUNG_KEEP_TIMINGS=1, no torch.compile baseline (the reference is timed once)
  fresh     RUNG_KEEP_TIMINGS=0, no baseline (the reference timed in every climb)
  baseline  RUNG_KEEP_TIMINGS=1 with the torch.compile baseline, as `rung check` runs by default

    python3 bench/ttv.py --out ttv.json [--problem problems/softmax] [--climbs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = {
    "kept": {"RUNG_KEEP_TIMINGS": "1", "RUNG_BASELINE": "none"},
    "fresh": {"RUNG_KEEP_TIMINGS": "0", "RUNG_BASELINE": "none"},
    "baseline": {"RUNG_KEEP_TIMINGS": "1", "RUNG_BASELINE": "compile"},
}


def climb(problem: str, solution: str, env: dict[str, str]) -> dict[str, Any]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", problem, solution, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    try:
        s = json.loads(done.stdout)["solutions"][0]
    except (ValueError, KeyError, IndexError):
        return {"error": done.stderr[-2000:], "wall_s": wall}
    seconds = {r["name"]: r["seconds"] for r in s["rungs"]}
    bench = next((r for r in s["rungs"] if r["name"] == "bench"), {})
    cases = bench.get("metrics", {}).get("cases", [])
    return {
        "verdict": s["verdict"],
        "ttv_s": sum(v for k, v in seconds.items() if k != "compile"),
        "wall_s": wall,
        "rungs_s": seconds,
        "statuses": {r["name"]: r["status"] for r in s["rungs"]},  # that what was timed ran at all
        "reference_kept": [("kept" in c.get("reference", {})) for c in cases],
        "bench_wall_s": [c.get("wall_s", {}) for c in cases],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", default="problems/softmax")
    ap.add_argument("--solution", default="solutions/correct/tuned.py", help="relative to the problem")
    ap.add_argument("--climbs", type=int, default=3)
    ap.add_argument("--variants", default="kept,fresh,baseline")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rung-ttv-"))
    env = {
        **os.environ,
        "RUNG_WORKSPACE": str(root / "ws"),
        "RUNG_CACHE_DIR": str(root / "cache"),
        "RUNG_SKIP": "profile",
    }
    solution = str(Path(args.problem) / args.solution)
    results: dict[str, list[dict[str, Any]]] = {}
    for name in args.variants.split(","):
        results[name] = []
        for i in range(args.climbs):
            r = climb(args.problem, solution, {**env, **VARIANTS[name]})
            results[name].append(r)
            print(
                f"{name} {i + 1}: ttv {r.get('ttv_s', float('nan')):.2f} s, wall {r['wall_s']:.2f} s, "
                f"reference kept {r.get('reference_kept')}, {r.get('verdict', r.get('error'))}",
                flush=True,
            )
    args.out.write_text(
        json.dumps({"problem": args.problem, "solution": solution, "variants": results}, indent=1)
    )


if __name__ == "__main__":
    main()
