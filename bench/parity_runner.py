"""Running the checkers for the parity suite: a time budget, capped subprocesses, and `rung check`.

Every checker runs in a fresh process (as each project runs its own), in its own process group,
so a timeout kills the pool workers and judges it started too (eval.py's spawned pool, rung's
solution process) rather than leaving them on the GPU.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rung.common.stats import relative_error

ROOT = Path(__file__).resolve().parents[1]
PROBLEM_SETS = ROOT / ".problem-sets"
RUNG_DEFAULTS = {"RUNG_BASELINE": "none", "RUNG_SKIP": "profile"}
RUNG_TIMEOUT_S = 900.0
JUDGES_OWN = "rung's judge "  # how a rung's message begins where the judge itself failed (judge/main.py)


class BudgetSpent(Exception):
    """The run's --max-seconds ran out; the row being judged is dropped, to be redone on --resume."""


class Budget:
    def __init__(self, max_seconds: float) -> None:
        self.deadline = time.monotonic() + max_seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        if self.left() <= 0:
            raise BudgetSpent


@dataclass
class Finished:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def run_capped(cmd: list[str], limit_s: float, budget: Budget, **kwargs: Any) -> Finished:
    """Run `cmd` for at most `limit_s`, or what is left of the budget; BudgetSpent if the budget,
    not the limit, is what stopped it."""
    budget.check()
    cap = min(limit_s, budget.left())
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs
    )
    try:
        out, err = proc.communicate(timeout=cap)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
        if cap < limit_s:
            raise BudgetSpent from None
    return Finished(proc.returncode, out, err, time.monotonic() - started, timed_out)


def rung_env(workspace: Path, cache: Path) -> dict[str, str]:
    """The environment for `rung check`: rung from this checkout, the suite's defaults unless the
    caller's environment sets them, and the given workspace and cache."""
    env = {**RUNG_DEFAULTS, **os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    env["RUNG_WORKSPACE"], env["RUNG_CACHE_DIR"] = str(workspace), str(cache)
    return env


def rung_settings() -> dict[str, str]:
    """The rung settings the table was made under, for its header."""
    env = {**RUNG_DEFAULTS, **os.environ}
    return {k: v for k, v in sorted(env.items()) if k.startswith("RUNG_") and k not in ("RUNG_WORKSPACE",)}


def rung_check(problem: Path, solution: Path, workspace: Path, cache: Path, budget: Budget) -> dict[str, Any]:
    """`rung check PROBLEM SOLUTION --json` in a fresh process: its verdict, reason and wall time."""
    return rung_checks(problem, [solution], workspace, cache, budget)[0]


def rung_checks(
    problem: Path, solutions: list[Path], workspace: Path, cache: Path, budget: Budget
) -> list[dict[str, Any]]:
    """`rung check PROBLEM SOLUTION... --json` in one fresh process, as a user checks several
    versions at once: each solution's verdict and reason, and the one wall time they shared
    (`seconds`, and `batch` the number of solutions it covers)."""
    cmd = [sys.executable, "-m", "rung", "check", str(problem), *map(str, solutions), "--json"]
    done = run_capped(cmd, RUNG_TIMEOUT_S, budget, env=rung_env(workspace, cache), cwd=workspace.parent)
    shared = {"seconds": round(done.seconds, 3), "exit": done.rc}
    if len(solutions) > 1:
        shared["batch"] = len(solutions)
    if done.timed_out:
        said = {
            "verdict": "ERROR",
            "said": "TIMEOUT",
            "reason": f"rung check ran past {RUNG_TIMEOUT_S:.0f} s",
        }
        return [{**said, **shared} for _ in solutions]
    return [{**parse_rung(done.stdout, done.stderr, i), **shared} for i in range(len(solutions))]


def loop_climb(
    problem: Path, first: Path, later: Path, workspace: Path, cache: Path, budget: Budget
) -> dict[str, Any]:
    """The later version's climb as the optimize loop has it (bench/loop_climb.py, a fresh
    process that climbs `first` then `later`): its verdict and wall seconds."""
    cmd = [
        sys.executable,
        str(Path(__file__).with_name("loop_climb.py")),
        str(problem),
        str(first),
        str(later),
    ]
    done = run_capped(cmd, RUNG_TIMEOUT_S, budget, env=rung_env(workspace, cache), cwd=workspace.parent)
    try:
        return dict(json.loads(done.stdout.strip().splitlines()[-1])["later"])
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"said": "ERROR", "reason": last[:300]}


def parse_rung(stdout: str, stderr: str, index: int = 0) -> dict[str, Any]:
    """rung's JSON reduced to the table's terms, for the `index`th solution it checked: PASS, FAIL,
    SKIPPED or ERROR; the first rung that went wrong and its message; the warnings rungs attached
    (where the problem's own check decides, rung's dtype, shape and tolerance rules warn); each
    rung's seconds; where the profile's went (`profile_spent`) where it ran; and how sure bench
    was of each case (`bench_cases`: the median, its standard error relative to it, the samples).
    A rung that ended in the judge's own failure (rung's judge out of GPU memory, or a bug of
    rung's) fails the check, as it must where a solution could have caused it, but
    says nothing of the solution here: that row is an ERROR, judged again on --resume."""
    try:
        solution = json.loads(stdout)["solutions"][index]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"verdict": "ERROR", "said": "no JSON", "reason": last[:300]}
    said = str(solution.get("verdict", ""))
    rungs = solution.get("rungs", [])
    bad = next((r for r in rungs if r["status"] in ("FAILED", "ERROR", "TIMEOUT", "INTERRUPTED")), None)
    judges_own = bad is not None and bad["status"] == "ERROR" and bad["message"].startswith(JUDGES_OWN)
    verdict = (
        "ERROR"
        if judges_own
        else "PASS"
        if said == "PASS"
        else "FAIL"
        if said.startswith("FAIL")
        else "SKIPPED"
        if said.startswith("SKIPPED")
        else "ERROR"
    )
    spent = [
        r["metrics"]["spent"] for r in rungs if r["name"] == "profile" and "spent" in r.get("metrics", {})
    ]
    timed = [
        {"median_us": c["median_ms"] * 1e3, "rel_err": relative_error(c), "samples": c.get("samples", 0)}
        for r in rungs
        if r["name"] == "bench"
        for c in r.get("metrics", {}).get("cases", [])
        if "median_ms" in c
    ]
    return {
        "verdict": verdict,
        "said": said,
        "reason": f"{bad['name']}: {_head_and_tail(bad['message'])}" if bad else "",
        "warnings": [
            f"{r['name']}: {w[:200]}" for r in rungs for w in r.get("metrics", {}).get("warnings", [])
        ],
        "rung_seconds": {r["name"]: round(float(r.get("seconds", 0.0)), 3) for r in rungs},
        **({"profile_spent": spent[0]} if spent else {}),
        **({"bench_cases": timed} if timed else {}),
    }


def _head_and_tail(message: str, head: int = 300, tail: int = 200) -> str:
    """A long message's start and its end: rung puts what names a failure's cause (TF32's
    rounding, a precision choice) after the figures and the check's own mismatch list."""
    if len(message) <= head + tail:
        return message
    return f"{message[:head]} … {message[-tail:]}"
