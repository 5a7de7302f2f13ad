"""Candidates per minute through the executors: one batch, climbed with 1, 2, 4 ... workers.

The batch is the shipped examples' correct and wrong solutions that can run here (on a machine
without a GPU: those whose kernels the CPU interpreter runs, Triton and torch), taken in turn
until there are `--count` of them, all climbing the full ladder but profile (RUNG_SKIP=profile).
Every configuration climbs the same batch into a fresh workspace, problems mixed in one queue;
the figure is candidates / wall minutes of the whole batch, worker start and problem loading
included. Verdicts must agree across configurations (the script says where they do not).
Scaling efficiency is throughput on N / (N x throughput on 1). On a shared machine, `--rounds R`
climbs the configurations R times in turn and the table takes each one's best round (the one
least slowed by others' work; every round is in the JSON, with the load average around it).

    python3 bench/throughput.py --workers 1 2 4 --ray 2 --count 32 --out out/throughput
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from rung import backends, executors
from rung.executors.local import visible_gpus
from rung.store import Store

ROOT = Path(__file__).resolve().parents[1]


def batch(count: int, on_gpu: bool) -> list[tuple[Path, Path]]:
    """`count` (problem, solution) pairs: each problem's correct and wrong solutions in turn."""
    found = []
    for problem in sorted((ROOT / "problems").iterdir()):
        for solution in sorted(problem.glob("solutions/*/*.py")):
            kinds = backends.detect_all(solution.read_text())
            if on_gpu or all(b.RUNS_ON_CPU for b in kinds):
                found.append((problem, solution))
    return list(itertools.islice(itertools.cycle(found), count))


def measure(name: str, executor: executors.Executor, pairs: list[tuple[Path, Path]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rung-throughput-") as workspace:
        store = Store(Path(workspace))
        try:
            load_before = os.getloadavg()[0]
            cpu_before = _children_cpu_s()
            began = time.perf_counter()
            runs = executors.check_pairs(store, executor, pairs)
            wall_s = time.perf_counter() - began
            cpu_s = _children_cpu_s() - cpu_before
        finally:
            store.close()
    row = {
        "config": name,
        "load_1min_after": os.getloadavg()[0],
        "candidates": len(runs),
        "wall_s": round(wall_s, 1),
        "per_minute": round(len(runs) / wall_s * 60, 2),
        "load_1min_before": load_before,
        # CPU seconds of the local workers and everything they waited for (judges, solution
        # processes; Ray's workers are not ours to count): cores_used well under the workers
        # asked for means the batch was short of CPU, e.g. others' work on a shared machine.
        "cpu_s": round(cpu_s, 1),
        "cores_used": round(cpu_s / wall_s, 2),
        "verdicts": [r.verdict for r in runs],
    }
    print(f"{name}: {row['candidates']} candidates in {row['wall_s']} s, {row['per_minute']}/min", flush=True)
    return row


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cores(row: dict[str, Any]) -> str:
    """Cores the batch kept busy on average; not counted through Ray (its workers are not ours)."""
    return "-" if row["config"].startswith("ray") or "cores_used" not in row else str(row["cores_used"])


def table(rows: list[dict[str, Any]], one: float) -> str:
    lines = [
        "| config | workers | candidates | wall s | per minute | speedup | efficiency | cores used |",
        "|---" * 8 + "|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['workers']} | {r['candidates']} | {r['wall_s']} | {r['per_minute']} |"
            f" {r['per_minute'] / one:.2f}x | {r['per_minute'] / one / r['workers']:.2f} | {cores(r)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="local worker counts")
    parser.add_argument("--ray", type=int, nargs="*", default=[], help="Ray task slots to try (local Ray)")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1, help="climb every configuration this many times")
    parser.add_argument("--out", type=Path, required=True, help="folder for throughput.json and .md")
    args = parser.parse_args()
    os.environ["RUNG_SKIP"] = "profile"
    on_gpu = bool(visible_gpus(os.environ))
    pairs = batch(args.count, on_gpu)
    rows = []
    for _ in range(args.rounds):
        for n in args.workers:
            rows.append({**measure(f"local x{n}", executors.from_spec("local", n), pairs), "workers": n})
    if args.ray:
        import ray

        ray.init(num_cpus=max(args.ray), include_dashboard=False, log_to_driver=False)
        for _ in range(args.rounds):
            for n in args.ray:
                rows.append({**measure(f"ray x{n}", executors.from_spec("ray", n), pairs), "workers": n})
        ray.shutdown()
    best = {}
    for r in rows:
        if r["config"] not in best or r["per_minute"] > best[r["config"]]["per_minute"]:
            best[r["config"]] = r
    one = max(r["per_minute"] for r in rows if r["config"] == "local x1")
    disagree = sorted({r["config"] for r in rows if r["verdicts"] != rows[0]["verdicts"]})
    doc = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "gpus": visible_gpus(os.environ),
        },
        "batch": [f"{p.name}/{s.parent.name}/{s.name}" for p, s in pairs],
        "rounds": args.rounds,
        "rows": rows,
        "verdicts_agree": not disagree,
        "disagree": disagree,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "throughput.json").write_text(json.dumps(doc, indent=1))
    (args.out / "throughput.md").write_text(table(list(best.values()), one))
    print(
        table(list(best.values()), one)
        + ("verdicts agree" if not disagree else f"verdicts DISAGREE: {disagree}")
    )


if __name__ == "__main__":
    main()
