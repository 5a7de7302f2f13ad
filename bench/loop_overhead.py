"""The optimize loop's own overhead: a round's wall time less the time spent waiting for the
agent and climbing the ladder (storing, hashing, writing versions, choosing the best, events).

python bench/loop_overhead.py PROBLEM SOLUTION [--rounds N] [--parallel K]

Replays SOLUTION as every candidate (the agent answers at once), so what is left is the loop.
Prints one JSON object: per-round overhead and wall seconds, and the overhead's share.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from rung.agents.replay import ReplayAgent
from rung.optimize import Budget, optimize
from rung.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("solution", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parallel", type=int, default=2)
    args = ap.parse_args()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as ws:
        agent = ReplayAgent([args.solution] * (args.rounds * args.parallel))
        outcome = optimize(
            Store(Path(ws)),
            args.problem,
            agent,
            args.solution,
            Budget(rounds=args.rounds),
            parallel=args.parallel,
            plateau=args.rounds + 1,
            on_event=lambda e: rounds.append(e) if e["event"] == "round" else None,
        )
    total = sum(r["round_s"] for r in rounds)
    overhead = sum(r["overhead_s"] for r in rounds)
    print(
        json.dumps(
            {
                "rounds": len(rounds),
                "candidates": len(outcome.candidates),
                "round_s": [r["round_s"] for r in rounds],
                "overhead_s": [r["overhead_s"] for r in rounds],
                "overhead_share": overhead / total if total else None,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
