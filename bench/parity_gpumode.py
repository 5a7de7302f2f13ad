"""Verdict parity with GPU MODE: its own eval.py beside `rung check`, on every pmpp_v2 problem (GPU only).

    bash bench/fetch_problem_sets.sh        # once: .problem-sets/gpumode/pmpp_v2 (never committed)
    python bench/parity_gpumode.py --out results/parity-gpumode [--only sort_py,...] [--max-seconds 540] [--resume]
        [--examples-only]

For each problem folder of pmpp_v2, every solution it ships (the example submission.py,
solutions/correct/*, solutions/wrong/*) and three wrong ones made from submission.py
(parity_solutions.SPOILERS) are judged twice:

- GPU MODE: the way its runner does it, in a fresh process per mode: the files task.yml names
  staged in one folder (the solution as submission.py), the cases written one per line
  (`key: value; ...`), `python eval.py test test.txt` with POPCORN_FD open on a file, then, if
  the tests passed, `python eval.py benchmark benchmark.txt`. PASS when both say `check: pass`.
- rung: `python -m rung check FOLDER SOLUTION --json` on the pmpp_v2 folder as it is (rung stages
  the files task.yml names itself), with RUNG_BASELINE=none and RUNG_SKIP=profile unless set.

Time to verdict: per problem, submission.py is checked first in a fresh workspace and cache dir
(cold), then a later version of it (the same code, other bytes) in the same ones (warm), then
that later version as the optimize loop climbs it (bench/loop_climb.py: in a process that climbed
submission.py, by a judge started while the agent thought, without the profile and scopes rungs
as the loop's candidates climb); all beside eval.py's test plus benchmark wall time, with each
side's timing precision per case (eval.py's mean's standard error as its benchmark mode writes
it, rung's median's). The other solutions are checked in that workspace.
Writes parity.json and parity.md to --out after every solution.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from parity_runner import PROBLEM_SETS, Budget, BudgetSpent, loop_climb, run_capped, rung_check, rung_settings
from parity_solutions import SPOILERS, gpumode_wrong, later_version, write
from parity_table import Row, Table

PMPP = PROBLEM_SETS / "gpumode" / "pmpp_v2"
SUBMISSION = "@SUBMISSION@"
MODES = ("test", "benchmark")


def problems(root: Path, only: set[str]) -> list[Path]:
    return [p for p in sorted(root.iterdir()) if (p / "task.yml").is_file() and (not only or p.name in only)]


def solutions(folder: Path, generated: Path) -> list[tuple[str, str, str, Path]]:
    """(name, origin, expected, path) for every solution of a problem; the example first, since
    it is the one timed cold then warm."""
    found = [("submission.py", "shipped example", "PASS", folder / "submission.py")]
    for kind, expected in (("correct", "PASS"), ("wrong", "FAIL")):
        for path in sorted((folder / "solutions" / kind).glob("*.py")):
            found.append((f"{kind}/{path.name}", f"shipped {kind}", expected, path))
    right = (folder / "submission.py").read_text()
    for spoiler in SPOILERS:
        path = write(generated / f"{spoiler}.py", gpumode_wrong(right, spoiler))
        found.append((f"generated/{spoiler}.py", "generated", "FAIL", path))
    return found


def stage(folder: Path, solution: Path, into: Path) -> dict[str, Any]:
    """The files task.yml names, under their names in `into`, with the cases files; the task."""
    task = yaml.safe_load((folder / "task.yml").read_text())
    into.mkdir(parents=True, exist_ok=True)
    for entry in task["files"]:
        source = solution if entry["source"] == SUBMISSION else folder / entry["source"]
        shutil.copyfile(source, into / entry["name"])
    for mode, key in (("test", "tests"), ("benchmark", "benchmarks")):
        (into / f"{mode}.txt").write_text(cases_text(task[key]))
    return dict(task)


def cases_text(cases: list[dict[str, Any]]) -> str:
    """eval.py's cases file: one case a line, `key: value` pairs joined by `; `."""
    return "".join("; ".join(f"{k}: {v}" for k, v in case.items()) + "\n" for case in cases)


def parse_popcorn(text: str) -> dict[str, str]:
    """What eval.py wrote to POPCORN_FD: `key: value` lines. A message with a newline in it goes
    on over lines that have no key of their own; those are joined to the value before them."""
    said: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        head, sep, value = line.partition(":")
        if sep and head and " " not in head.strip():
            key = head.strip()
            said[key] = value.strip()
        elif key:
            said[key] = f"{said[key]}\n{line}"
    return said


def mode_verdict(
    said: dict[str, str], rc: int, stderr: str, timed_out: bool, limit_s: float
) -> tuple[str, str]:
    """One mode's PASS or FAIL and why. eval.py re-raises a submission's exception out of its
    pool and dies without a `check:` line; GPU MODE reports that as a failed run, so it is a FAIL
    here too, with the exception as the reason."""
    if timed_out:
        return "FAIL", f"timed out after {limit_s:.0f} s (task.yml's limit)"
    if said.get("check") == "pass":
        return "PASS", ""
    if said.get("check") == "fail":
        errors = [f"{k.rsplit('.', 1)[0]}: {v}" for k, v in said.items() if k.endswith(".error")]
        return "FAIL", "; ".join(errors) or "check: fail"
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    return "FAIL", f"eval.py exited {rc} with no verdict: {last[:300]}"


def run_mode(staged: Path, mode: str, limit_s: float, budget: Budget) -> dict[str, Any]:
    """`python eval.py MODE MODE.txt` in the staged folder, POPCORN_FD open on a file."""
    with tempfile.TemporaryFile("w+") as popcorn:
        env = {**_plain_env(), "POPCORN_FD": str(popcorn.fileno())}
        cmd = [sys.executable, "eval.py", mode, f"{mode}.txt"]
        done = run_capped(cmd, limit_s, budget, cwd=staged, env=env, pass_fds=(popcorn.fileno(),))
        popcorn.seek(0)
        said = parse_popcorn(popcorn.read())
    verdict, reason = mode_verdict(said, done.rc, done.stderr, done.timed_out, limit_s)
    ran = {"verdict": verdict, "reason": reason, "seconds": round(done.seconds, 3), "exit": done.rc}
    if mode == "benchmark":
        ran["cases"] = benchmark_cases(said)
    return ran


def benchmark_cases(said: dict[str, str]) -> list[dict[str, float]]:
    """How sure eval.py's benchmark mode was of each case: its mean (eval.py times in ns), the
    mean's standard error relative to it, and the calls it took, as it wrote them to POPCORN_FD."""
    cases = []
    for i in range(int(said.get("benchmark-count", 0) or 0)):
        try:
            mean, err = float(said[f"benchmark.{i}.mean"]), float(said[f"benchmark.{i}.err"])
            runs = int(float(said[f"benchmark.{i}.runs"]))
        except (KeyError, ValueError):
            continue  # a case that failed wrote an error, not figures
        cases.append({"mean_us": mean / 1e3, "rel_err": err / mean if mean else 0.0, "runs": runs})
    return cases


def _plain_env() -> dict[str, str]:
    """eval.py's environment: ours without rung's settings (it never sees them) or a seed."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("RUNG_", "POPCORN_"))}


def gpumode_eval(folder: Path, solution: Path, work: Path, budget: Budget) -> dict[str, Any]:
    """GPU MODE's verdict: test mode, then benchmark mode if the tests passed."""
    task = stage(folder, solution, work)
    modes: dict[str, Any] = {}
    for mode in MODES:
        modes[mode] = run_mode(work, mode, float(task.get(f"{mode}_timeout", 180)), budget)
        if modes[mode]["verdict"] != "PASS":
            break
    failed = next((m for m in modes.values() if m["verdict"] != "PASS"), None)
    return {
        "verdict": failed["verdict"] if failed else "PASS",
        "reason": failed["reason"] if failed else "",
        "seconds": round(sum(m["seconds"] for m in modes.values()), 3),
        "modes": modes,
    }


def judge_problem(folder: Path, out: Path, table: Table, budget: Budget, examples_only: bool) -> None:
    done = table.done()
    with tempfile.TemporaryDirectory(prefix=f"parity-{folder.name}-") as tmp:
        workspace, cache = Path(tmp) / "ws", Path(tmp) / "cache"
        workspace.mkdir()
        generated = out / "solutions" / folder.name
        found = solutions(folder, generated)
        for name, origin, expected, path in found[:1] if examples_only else found:
            if f"{folder.name}/{name}" in done:
                continue
            theirs = gpumode_eval(folder, path, Path(tmp) / "staged" / name.replace("/", "_"), budget)
            row = Row(
                folder.name,
                name,
                origin,
                expected,
                theirs,
                rung_check(folder, path, workspace, cache, budget),
            )
            if name == "submission.py":
                later = write(generated / "submission_v2.py", later_version(path.read_text()))
                row.rung_warm = rung_check(folder, later, workspace, cache, budget)
                row.rung_loop = loop_climb(folder, path, later, workspace, cache, budget)
            table.add(row)
            table.write(out)
            print(f"{row.key}: {theirs['verdict']} / rung {row.rung.get('said')}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for parity.json, parity.md, solutions/")
    ap.add_argument("--only", default="", help="comma-separated problem folders (e.g. sort_py,matmul_py)")
    ap.add_argument("--max-seconds", type=float, default=540.0, help="stop cleanly after this much wall time")
    ap.add_argument("--resume", action="store_true", help="keep and skip the rows already in --out")
    ap.add_argument(
        "--examples-only",
        action="store_true",
        help="only each problem's submission.py (cold, warm, in the loop): the time-to-verdict rows",
    )
    args = ap.parse_args()
    if not PMPP.is_dir():
        print(f"{PMPP}: missing; run bash bench/fetch_problem_sets.sh first", file=sys.stderr)
        return 2
    settings = rung_settings()
    title = "Verdict parity: GPU MODE pmpp_v2, eval.py (test then benchmark) beside rung check"
    table = (
        Table.resume(args.out, title, "eval.py", settings)
        if args.resume
        else Table(title, "eval.py", settings)
    )
    budget = Budget(args.max_seconds)
    try:
        for folder in problems(PMPP, {s for s in args.only.split(",") if s}):
            judge_problem(folder, args.out, table, budget, args.examples_only)
        table.complete = True
    except BudgetSpent:
        print("stopped: --max-seconds spent; run again with --resume to judge the rest", flush=True)
    table.write(args.out)
    print((args.out / "parity.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
