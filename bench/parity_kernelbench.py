"""Verdict parity with KernelBench: its own evaluation beside `rung check`, on a fixed sample (GPU only).

    bash bench/fetch_problem_sets.sh        # once: .problem-sets/kernelbench (never committed)
    python bench/parity_kernelbench.py --out results/parity-kernelbench [--only level1/21,...] \
        [--max-seconds 540] [--resume] [--batch]

The sample, fixed so every run judges the same problems: level 1 problems 1, 11, 21, ..., 91 (ten,
every tenth by its number) and level 2 problems 1, 21, 41, 61, 81 (five, every twentieth): matmuls,
activations, pooling, reductions, convolutions and fused level-2 models alike.

Per problem, five solutions, all generated (parity_solutions.py):
- same.py: the problem's own file with `class ModelNew(Model)`: right (expected PASS);
- scope.py: `class ModelNew(Model)` alone, Model taken from the namespace the evaluator runs it
  in: the values are right and KernelBench runs it; rung's solution process holds no reference,
  so rung refuses it at load by design (expected PASS, the one disagreement built in);
- scaled.py, zeroed.py, input.py: Model's output spoiled (expected FAIL).

KernelBench's verdict: `kernelbench.eval.eval_kernel_against_ref` from its repository's src/ (run
from .problem-sets, never copied), in a fresh process per solution, with the settings of its
scripts/run_and_check.py: seed 42, 5 correctness trials, 100 timed trials, cuda_event timing, fp32,
the cuda backend (it execs the solution's source). Its package imports modules this suite does not
need and the GPU image lacks (pydantic, requests, dotenv, tqdm, openai, litellm); each one that
is not installed is replaced by a stand-in module before the import, and the row records which.
PASS when it returns compiled and correctness both true.

rung's: `python -m rung check PROBLEM.py SOLUTION --json`, RUNG_BASELINE=none and
RUNG_SKIP=profile unless set. same.py is checked cold (fresh workspace and cache dir), then a
later version of it warm, then in the loop (bench/loop_climb.py); the rest in that workspace,
each in a check of its own, or with --batch all four in one (verdicts only: the time to verdict
is same.py's cold check alone, and the sample fits fewer GPU calls).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib
import importlib.util
import inspect
import json
import sys
import tempfile
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from parity_runner import (
    PROBLEM_SETS,
    Budget,
    BudgetSpent,
    loop_climb,
    run_capped,
    rung_check,
    rung_checks,
    rung_settings,
)
from parity_solutions import (
    SPOILERS,
    kernelbench_same,
    kernelbench_scope,
    kernelbench_wrong,
    later_version,
    write,
)
from parity_table import Row, Table

KERNELBENCH = PROBLEM_SETS / "kernelbench"
SAMPLE = {"level1": range(1, 100, 10), "level2": range(1, 100, 20)}
OWN_SETTINGS = {
    "seed_num": 42,
    "num_correct_trials": 5,
    "num_perf_trials": 100,
    "measure_performance": True,
    "timing_method": "cuda_event",
    "backend": "cuda",
}
OWN_TIMEOUT_S = 900.0
RESULT_MARK = "PARITY-RESULT "
KEPT_EVALS = "kernelbench_evals.json"
_KEPT_LOCK = threading.Lock()


def sample(root: Path, only: set[str]) -> list[tuple[str, Path]]:
    """(level/file stem, file) for every problem of the sample, in order; `only` (level/number)
    keeps some."""
    picked = []
    for level, numbers in SAMPLE.items():
        for n in numbers:
            found = sorted((root / "KernelBench" / level).glob(f"{n}_*.py"))
            if found and (not only or f"{level}/{n}" in only):
                picked.append((f"{level}/{found[0].stem}", found[0]))
    return picked


def solutions(problem: Path, generated: Path) -> list[tuple[str, str, Path, str]]:
    """(name, expected, path, note) for the generated solutions of one problem; same.py first."""
    source = problem.read_text()
    found = [
        ("same.py", "PASS", write(generated / "same.py", kernelbench_same(source)), ""),
        (
            "scope.py",
            "PASS",
            write(generated / "scope.py", kernelbench_scope()),
            "by design: takes Model from the evaluator's namespace, which rung's solution process does not share",
        ),
    ]
    for spoiler in SPOILERS:
        found.append(
            (
                f"{spoiler}.py",
                "FAIL",
                write(generated / f"{spoiler}.py", kernelbench_wrong(source, spoiler)),
                "",
            )
        )
    return found


class _Fields:
    """A stand-in for pydantic.BaseModel where pydantic is not installed: keyword fields over the
    class's annotated defaults (each default copied, as pydantic does), attributes settable."""

    def __init__(self, **values: Any) -> None:
        for cls in reversed(type(self).__mro__):
            for name in inspect.get_annotations(cls):
                if name in cls.__dict__:
                    setattr(self, name, copy.deepcopy(cls.__dict__[name]))
        for name, value in values.items():
            setattr(self, name, value)


def _unavailable(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a stand-in module of the parity suite: KernelBench's evaluation does not call it")


# Modules KernelBench's package imports that its evaluation never uses, and the names it takes
# from them at import time.
STAND_INS: dict[str, dict[str, Any]] = {
    "pydantic": {"BaseModel": _Fields},
    "requests": {},
    "dotenv": {"load_dotenv": lambda *a, **k: False},
    "tqdm": {"tqdm": lambda iterable=None, *a, **k: iterable},
    "openai": {"OpenAI": _unavailable},
    "litellm": {"completion": _unavailable},
}


def load_own_eval(src: Path) -> tuple[Any, list[str]]:
    """KernelBench's eval module, imported from its repository's src/, and the modules stood in."""
    stood_in = []
    for name, attrs in STAND_INS.items():
        if importlib.util.find_spec(name) is None:
            module = types.ModuleType(name)
            module.__dict__.update(attrs)
            sys.modules[name] = module
            stood_in.append(name)
    sys.path.insert(0, str(src))
    return importlib.import_module("kernelbench.eval"), stood_in


def own_verdict(result: Any) -> tuple[str, str]:
    """KernelBench's result in the table's terms: PASS only when compiled and correct."""
    if result is None:
        return "ERROR", "eval_kernel_against_ref returned None (its 'lock file error, retry')"
    meta = {k: str(v) for k, v in dict(result.metadata).items()}
    if not result.compiled:
        return "FAIL", f"compile: {meta.get('compilation_error', '')}"[:300]
    if not result.correctness:
        why = [meta[k] for k in ("correctness_issue", "runtime_error", "max_difference") if k in meta]
        return "FAIL", "; ".join(why)[:300] or "correctness false"
    return "PASS", "excessive speedup flagged" if meta.get("excessive_speedup") == "True" else ""


def child(problem: Path, solution: Path) -> None:
    """(fresh process) KernelBench's own evaluation of one solution; one result line on stdout."""
    own_eval, stood_in = load_own_eval(KERNELBENCH / "src")
    import torch

    result = own_eval.eval_kernel_against_ref(
        problem.read_text(),
        solution.read_text(),
        build_dir=str(Path.cwd() / "build"),
        precision=torch.float32,
        **OWN_SETTINGS,
    )
    verdict, reason = own_verdict(result)
    figures = {
        "runtime_us": getattr(result, "runtime", None),
        "ref_runtime_us": getattr(result, "ref_runtime", None),
    }
    print(RESULT_MARK + json.dumps({"verdict": verdict, "reason": reason, "stood_in": stood_in, **figures}))


def kernelbench_eval(problem: Path, solution: Path, work: Path, budget: Budget) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(problem), str(solution)]
    done = run_capped(cmd, OWN_TIMEOUT_S, budget, cwd=work)
    line = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith(RESULT_MARK)), None)
    if line is not None:
        said = json.loads(line[len(RESULT_MARK) :])
    elif done.timed_out:
        said = {"verdict": "ERROR", "reason": f"ran past {OWN_TIMEOUT_S:.0f} s"}
    else:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        said = {"verdict": "ERROR", "reason": f"exited {done.rc} with no result: {last}"[:300]}
    return {**said, "seconds": round(done.seconds, 3)}


def kept_eval(problem: Path, solution: Path, out: Path, work: Path, budget: Budget) -> dict[str, Any]:
    """KernelBench's evaluation of `solution`, kept in `out` as soon as it finishes: a run cut
    short inside a problem loses rung's half, never KernelBench's (on level 1 21's 6 GiB tensors,
    its five evaluations alone take minutes), and --resume takes it from there. Keyed by both
    files' bytes, so an edit re-evaluates."""
    path = out / KEPT_EVALS
    key = hashlib.sha256(problem.read_bytes() + b"\0" + solution.read_bytes()).hexdigest()
    with _KEPT_LOCK:
        kept = json.loads(path.read_text()) if path.is_file() else {}
    if key in kept:
        return kept[key]
    said = kernelbench_eval(problem, solution, work, budget)
    if said["verdict"] in ("PASS", "FAIL"):  # an ERROR (a crash, a timeout) is tried again
        with _KEPT_LOCK:  # read again: evaluations running beside this one may have kept theirs
            kept = json.loads(path.read_text()) if path.is_file() else {}
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**kept, key: said}, indent=1))
    return said


def judge_problem(
    name: str, problem: Path, out: Path, table: Table, budget: Budget, batch: bool, own_jobs: int = 1
) -> None:
    """Every solution of one problem by both checkers. same.py is checked cold; without `batch`,
    each other solution in a `rung check` of its own and a later version of same.py warm and in the
    loop; with it, the others in one `rung check` (their verdicts only: a check of several versions
    at once shares its judge and its wall time). KernelBench's evaluations run `own_jobs` at a time,
    before rung's checks: four at once ran an 80 GB GPU out of memory on KernelBench's 6 GiB
    tensors and failed a correct solution."""
    done = table.done()
    with tempfile.TemporaryDirectory(prefix="parity-kb-") as tmp:
        workspace, cache = Path(tmp) / "ws", Path(tmp) / "cache"
        workspace.mkdir()
        generated = out / "solutions" / name.replace("/", "_")
        todo = [s for s in solutions(problem, generated) if f"{name}/{s[0]}" not in done]
        with ThreadPoolExecutor(max_workers=own_jobs) as pool:
            evaluated = pool.map(
                lambda s: kept_eval(problem, s[2], out, Path(tmp) / "own" / s[0], budget), todo
            )
            theirs = dict(zip((s[0] for s in todo), evaluated, strict=True))
        first, rest = [s for s in todo if s[0] == "same.py"], [s for s in todo if s[0] != "same.py"]
        groups = [first, rest] if batch else [[s] for s in first + rest]
        for group in (g for g in groups if g):
            checked = rung_checks(problem, [s[2] for s in group], workspace, cache, budget)
            for (solution, expected, path, note), ours in zip(group, checked, strict=True):
                row = Row(name, solution, "generated", expected, theirs[solution], ours)
                row.note = note
                if solution == "same.py" and not batch:
                    later = write(generated / "same_v2.py", later_version(path.read_text()))
                    row.rung_warm = rung_check(problem, later, workspace, cache, budget)
                    row.rung_loop = loop_climb(problem, path, later, workspace, cache, budget)
                table.add(row)
                print(f"{row.key}: {row.theirs['verdict']} / rung {row.rung.get('said')}", flush=True)
            table.write(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="folder for parity.json, parity.md, solutions/")
    ap.add_argument("--only", default="", help="comma-separated level/number (e.g. level1/21,level2/41)")
    ap.add_argument("--max-seconds", type=float, default=540.0, help="stop cleanly after this much wall time")
    ap.add_argument("--resume", action="store_true", help="keep and skip the rows already in --out")
    ap.add_argument(
        "--batch",
        action="store_true",
        help="verdicts first: same.py cold alone, the other solutions in one rung check, no warm or loop climbs",
    )
    ap.add_argument(
        "--own-jobs",
        type=int,
        default=1,
        help="KernelBench's evaluations of one problem run this many at a time (each holds the "
        "problem's tensors on the GPU: one of level 1 21's held 43 GiB on 2026-12-06)",
    )
    ap.add_argument("--child", nargs=2, type=Path, metavar=("PROBLEM", "SOLUTION"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    if args.out is None:
        ap.error("--out is required")
    if not (KERNELBENCH / "KernelBench").is_dir():
        print(f"{KERNELBENCH}: missing; run bash bench/fetch_problem_sets.sh first", file=sys.stderr)
        return 2
    settings = rung_settings()
    title = "Verdict parity: KernelBench (eval_kernel_against_ref) beside rung check"
    table = (
        Table.resume(args.out, title, "KernelBench", settings)
        if args.resume
        else Table(title, "KernelBench", settings)
    )
    if not args.resume:
        (args.out / KEPT_EVALS).unlink(missing_ok=True)
    budget = Budget(args.max_seconds)
    try:
        for name, problem in sample(KERNELBENCH, {s for s in args.only.split(",") if s}):
            judge_problem(name, problem, args.out, table, budget, args.batch, args.own_jobs)
        table.complete = True
    except BudgetSpent:
        print("stopped: --max-seconds spent; run again with --resume to judge the rest", flush=True)
    table.write(args.out)
    print((args.out / "parity.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
