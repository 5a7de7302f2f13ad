"""A call of two kernels: bench's headline against Nsight Compute's summed kernel durations (GPU only).

    python3 bench/headline_vs_ncu.py --out DIR [--runs 3] [--sizes 4096x1024 64x262144 ...]

The split-K matvec of bench/spread launches two kernels per call (partial sums, then their
reduction). For each size, a problem whose only benchmark case is that size is checked --runs
times, each `rung check` a fresh process with the profile rung on: the profile rung profiles
one call of that case under ncu (`--clock-control none`) and its witness records ncu's summed
`gpu__time_duration` beside bench's figure for the same case. Targets (issue 39): the headline
within 10% of ncu's sum at 10-50 us, within 3% above 50 us, and within 2% run to run.
Writes headline_vs_ncu.json and a Markdown table to --out.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from parity_runner import rung_env

ROOT = Path(__file__).resolve().parents[1]
MATVEC = ROOT / "bench" / "spread" / "matvec"
# (rows, K): about 12 us (the 4096x1024 case), 25 us, 50 us and 110 us on an H100
SIZES = ((4096, 1024), (64, 2**18), (256, 2**17), (256, 2**19))


def problem_of(rows: int, k: int, where: Path) -> Path:
    """bench/spread's matvec with one benchmark case, (rows, k)."""
    text = (MATVEC / "problem.py").read_text()
    one = f'BENCHMARKS = [{{"m": {rows}, "k": {k}}}]'
    text, n = re.subn(r"^BENCHMARKS = \[.*\]$", one, text, flags=re.MULTILINE)
    if n != 1:
        raise SystemExit("bench/spread/matvec/problem.py: no one-line BENCHMARKS to replace")
    folder = where / f"matvec_{rows}x{k}"
    folder.mkdir()
    (folder / "problem.py").write_text(text)
    return folder


def check(problem: Path, workspace: Path, cache: Path) -> dict[str, Any]:
    env = {**rung_env(workspace, cache), "RUNG_SKIP": "", "RUNG_BASELINE": "none"}
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rung", "check", str(problem), str(MATVEC / "solutions/split_k.py"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    run: dict[str, Any] = {"wall_s": round(time.perf_counter() - began, 1)}
    try:
        solution = json.loads(done.stdout)["solutions"][0]
    except (ValueError, KeyError, IndexError):
        return {**run, "error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    rungs = {r["name"]: r for r in solution["rungs"]}
    witness = rungs.get("profile", {}).get("metrics", {}).get("witness", {})
    cases = rungs.get("bench", {}).get("metrics", {}).get("cases", [])
    run.update(
        verdict=solution["verdict"],
        headline_us=cases[-1]["median_ms"] * 1e3 if cases else None,
        kernels_per_call=cases[-1].get("kernels_per_call") if cases else None,
        ncu_us=witness.get("ncu_us"),
        witness=witness.get("verdict"),
        profile=f"{rungs.get('profile', {}).get('status')}: {rungs.get('profile', {}).get('message', '')[:200]}",
    )
    return run


def summary(rows: int, k: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    heads = [r["headline_us"] for r in runs if r.get("headline_us")]
    ncus = [r["ncu_us"] for r in runs if r.get("ncu_us")]
    out: dict[str, Any] = {"rows": rows, "k": k, "runs": runs}
    if heads and ncus:
        head, ncu = statistics.median(heads), statistics.median(ncus)
        out.update(
            headline_us=round(head, 2),
            ncu_sum_us=round(ncu, 2),
            over_ncu=round(head / ncu - 1, 4),
            run_to_run=round((max(heads) - min(heads)) / head, 4),
            target=0.03 if ncu >= 50 else 0.10,
        )
    return out


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| W (rows x K) | ncu sum, us | headline, us | headline vs ncu | target | run to run (2%) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        if "headline_us" not in r:
            lines.append(f"| {r['rows']}x{r['k']} | - | - | {r['runs'][0].get('error', 'no figure')} | | |")
            continue
        lines.append(
            f"| {r['rows']}x{r['k']} | {r['ncu_sum_us']:.1f} | {r['headline_us']:.1f} | {r['over_ncu']:+.1%} "
            f"| {r['target']:.0%} | {r['run_to_run']:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--sizes", nargs="*", default=[f"{r}x{k}" for r, k in SIZES], help="ROWSxK each (default: all four)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        cache = where / "cache"
        for rows, k in (tuple(int(n) for n in size.split("x")) for size in args.sizes):
            problem = problem_of(rows, k, where)
            runs = [check(problem, where / f"ws_{rows}x{k}_{i}", cache) for i in range(args.runs)]
            results.append(summary(rows, k, runs))
            print(f"{rows}x{k}: {json.dumps(results[-1], default=str)[:600]}", flush=True)
            (args.out / "headline_vs_ncu.json").write_text(json.dumps(results, indent=1))
    table = markdown(results)
    (args.out / "headline_vs_ncu.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
