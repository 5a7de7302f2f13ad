"""What dump and trace add to a check: the default ladder (profile left out) against the same
ladder without dump and trace, climb for climb, on each problem's tuned version.

Per problem, one workspace and cache: a first climb fills the build cache and the kept reference
timings, then the two variants alternate (`--pairs` times), so neither is favoured by warm caches
or by the GPU's clocks drifting one way. Figures are the process's wall time (what a person waits
for) and the rungs' own seconds; the overhead is the median ratio of with to without.

trace reads the per-kernel records bench's CUPTI activity trace already holds (bench times with
CUPTI whether trace runs or not), and dump reads the compiled kernels in the controller, so what
this measures is what leaving them out saves.

    python3 bench/ladder_overhead.py --out overhead.json [--problems softmax matmul] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import ttv  # bench/ is the script's folder, first on sys.path

VARIANTS = {"with": "profile,scopes", "without": "profile,scopes,dump,trace"}


def climb(problem: Path, env: dict[str, str], skip: str) -> dict[str, Any]:
    """`rung check` of the problem's tuned version with `skip` left out (bench/ttv.py's climb),
    with the rungs' seconds summed."""
    done = ttv.climb(str(problem), str(problem / "solutions/correct/tuned.py"), {**env, "RUNG_SKIP": skip})
    if "rungs_s" in done:
        done["ladder_s"] = sum(done["rungs_s"].values())
    return done


def one_problem(problem: Path, pairs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "RUNG_WORKSPACE": f"{tmp}/ws",
            "RUNG_CACHE_DIR": f"{tmp}/cache",
            "RUNG_BASELINE": "none",
        }
        first = climb(problem, env, VARIANTS["with"])
        climbs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
        for _ in range(pairs):
            for name, skip in VARIANTS.items():
                climbs[name].append(climb(problem, env, skip))
    ratios = {}
    for key in ("wall_s", "ladder_s"):
        with_ = [c[key] for c in climbs["with"] if key in c]
        without = [c[key] for c in climbs["without"] if key in c]
        if with_ and without:
            ratios[key] = statistics.median(with_) / statistics.median(without)
    # The figure means something only where dump and trace ran (OK) in every climb "with" them.
    ran = {c.get("statuses", {}).get(rung) for c in climbs["with"] for rung in ("dump", "trace")}
    return {
        "problem": problem.name,
        "first": first,
        "climbs": climbs,
        "ratio": ratios,
        "dump_trace": sorted(map(str, ran)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--problems", nargs="*", default=[])
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent / "problems"
    names = args.problems or sorted(
        p.name for p in root.iterdir() if (p / "solutions/correct/tuned.py").is_file()
    )
    results = []
    for name in names:
        r = one_problem(root / name, args.pairs)
        results.append(r)
        args.out.write_text(json.dumps(results, indent=1))
        ratio = r["ratio"]
        print(
            f"{name:12s} wall with/without dump+trace {ratio.get('wall_s', float('nan')):.3f}  "
            f"rungs {ratio.get('ladder_s', float('nan')):.3f}  dump and trace: {'/'.join(r['dump_trace'])}",
            flush=True,
        )


if __name__ == "__main__":
    main()
