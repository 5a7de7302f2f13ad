"""Time to verdict as the optimize loop has it: a later version climbed in a process that already
climbed an earlier one, by a judge started while the agent thought (rung.spare_judges).

    python3 bench/loop_climb.py PROBLEM FIRST LATER [--think-s 5] [--no-spare]

Prints one JSON object: the first version's climb (its judge the one that described the
problem, as `rung check` does) and the later one's, each with its verdict and wall seconds from
the climb's start to its verdict, and the rungs it left out. Between them the loop's spare judge
is started and left `--think-s` seconds, standing for the agent's reply (an LLM's takes far
longer); `--no-spare` waits as long but climbs the later version with a judge of its own, as
before spare judges. The later version climbs as the loop's candidates do, without the profile
and scopes rungs (rung.chosen.candidates_deferred): the loop profiles a new best once, after its
round, not on the way to each version's verdict.
Workspace and cache come from RUNG_WORKSPACE and RUNG_CACHE_DIR, as for `rung check`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rung import chosen, runner
from rung.spare_judges import SpareJudges
from rung.spec import Run, Status
from rung.store import Store, find_workspace


def _said(run: Run, seconds: float) -> dict[str, Any]:
    left_out = [r.name for r in run.rungs if r.status == Status.SKIPPED and r.message == runner.LEFT_OUT]
    return {"said": run.verdict, "seconds": round(seconds, 3), "left_out": left_out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problem", type=Path)
    ap.add_argument("first", type=Path)
    ap.add_argument("later", type=Path)
    ap.add_argument("--think-s", type=float, default=5.0)
    ap.add_argument("--no-spare", action="store_true", help="no judge started during the wait")
    args = ap.parse_args()
    with Store(find_workspace()) as store:
        spares = SpareJudges(store.root / "scratch")
        try:
            began = time.perf_counter()
            problem, device, judge = runner.describe_keeping(args.problem, store.root / "scratch")
            first = runner.climb(store, problem, device, args.first, judge=judge)
            first_s = time.perf_counter() - began
            with chosen.candidates_deferred():
                if not args.no_spare:
                    spares.ready(Path(problem.path))
                time.sleep(args.think_s)
                began = time.perf_counter()
                later = runner.climb(
                    store, problem, device, args.later, judge=spares.take(Path(problem.path))
                )
                later_s = time.perf_counter() - began
        finally:
            spares.close()
    said = {"first": _said(first, first_s), "later": _said(later, later_s), "think_s": args.think_s}
    print(json.dumps({**said, "spare": not args.no_spare}))


if __name__ == "__main__":
    main()
