"""Climbing the ladder: one judge per solution, one request per rung, every verdict stored.

Controller side: this module never imports a solution and never touches CUDA. A judge that
crashes or hangs costs the rung it was on (ERROR or TIMEOUT, with its stderr tail); the next
rung that can still tell something starts a fresh judge.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from rung import backends, devices, knobs, precheck, rung_table
from rung.common import confine
from rung.common.child import ChildCrashed, ChildTimedOut
from rung.common.logcap import last_words
from rung.common.messages import JudgeHello
from rung.errors import ProblemError, UsageError
from rung.judge_process import Judge
from rung.ladder import LADDER, RungSpec
from rung.spec import Device, Problem, Run, RungResult, Solution, Status
from rung.store import Store

JUDGE_GRACE_S = 600.0
LEFT_OUT = "left out (RUNG_SKIP)"  # a rung RUNG_SKIP names: its message

OnRung = Callable[[Run, RungResult], None]
OnRun = Callable[[Run], None]

# One climb at a time in this process: a climb ends by killing every process below this one that
# was not there when it began, which would be another climb's judges (an agent's tool calls and
# the loop climb from several threads). Candidates climb at once through rung.executors instead.
_CLIMBING = threading.Lock()


def _hello(
    problem_dir: Path, solution: Path | None, source: str | None, run_dir: Path, seed: int
) -> JudgeHello:
    """The judge's first message: the solution travels as the source that was hashed and stored."""
    return JudgeHello(
        problem=str(problem_dir.resolve()),
        source=source,
        solution_name=solution.name if solution else "",
        run_dir=str(run_dir.resolve()),
        seed=seed,
        cpu_memory_mb=int(knobs.get("RUNG_WORKER_MEMORY_MB")),
        confine=bool(knobs.get("RUNG_CONFINE")),
        cwd=str(problem_dir.resolve() if problem_dir.is_dir() else problem_dir.resolve().parent),
    )


def _ask(folder: Path, scratch: Path, op: str, timeout_s: float) -> dict[str, Any]:
    """One request to a fresh judge that holds no solution."""
    judge = Judge(_hello(folder, None, None, scratch, 0), scratch)
    try:
        return judge.call(op, {}, timeout_s)
    finally:
        judge.close()


def describe(problem_dir: Path, scratch: Path) -> tuple[Problem, Device]:
    """Load the problem in a judge: its cases and this machine's device, or ProblemError."""
    problem, device, judge = describe_keeping(problem_dir, scratch)
    judge.discard()
    return problem, device


def describe_keeping(
    problem_dir: Path, scratch: Path, judge: Judge | None = None, builds: bool = True
) -> tuple[Problem, Device, Judge]:
    """`describe`, and the judge that answered, still running with the problem loaded, for the
    next climb of this problem to adopt (`climb(judge=...)`); the caller discards it if unused.
    `judge`, one started for this problem and holding no solution (a spare), answers in place of
    a new one; `builds`: whether that climb's solution is one compile builds (`JudgeHello`)."""
    if not problem_dir.exists():
        if judge is not None:
            judge.discard()
        raise ProblemError(f"{problem_dir}: no such folder or file")
    judge = judge or unattached_judge(problem_dir, scratch, builds)
    try:
        reply = judge.call("describe", {}, 120)
    except (ChildCrashed, ChildTimedOut) as e:
        judge.discard()
        words = last_words(e.stderr_tail)
        raise ProblemError(
            f"{problem_dir}: loading the problem failed: {e}" + (f": {words}" if words else "")
        ) from None
    if "error" in reply:
        judge.discard()
        raise ProblemError(reply["error"])
    device = Device(**reply["device"])
    if device.kind == "cuda":
        try:
            device.ceilings = device_ceilings(device, scratch, judge=judge)
        except BaseException:
            judge.discard()
            raise
    return Problem(**reply["problem"]), device, judge


def unattached_judge(problem_dir: Path, scratch: Path, builds: bool = True) -> Judge:
    """A judge for `problem_dir` holding no solution yet, for a climb to adopt; not started.
    `builds`: whether the solution it will take is likely one compile builds (`JudgeHello`)."""
    scratch.mkdir(parents=True, exist_ok=True)
    # A folder of its own: an adopted judge goes on writing its log there while others describe.
    folder = Path(tempfile.mkdtemp(prefix="judge-", dir=scratch))
    return Judge(dataclasses.replace(_hello(problem_dir, None, None, folder, 0), builds=builds), folder)


def probe_device(scratch: Path, remeasure: bool = False) -> Device:
    """This machine's device, asked of a judge, with its ceilings where it is a GPU."""
    device = Device(**_ask(Path.cwd(), scratch, "device", 120)["device"])
    if device.kind == "cuda":
        device.ceilings = device_ceilings(device, scratch, remeasure)
    return device


def device_ceilings(
    device: Device, scratch: Path, remeasure: bool = False, judge: Judge | None = None
) -> dict[str, Any]:
    """The GPU's measured ceilings: from the cache, else measured now and cached; in `judge`
    where one is running (the one that described the problem: no judge started for it alone)."""
    known = None if remeasure else devices.cached(device)
    if known is not None:
        return known
    asked = (
        judge.call("ceilings", {}, 600) if judge is not None else _ask(Path.cwd(), scratch, "ceilings", 600)
    )
    ceilings = dict(asked["ceilings"])
    devices.remember(device, ceilings)
    return ceilings


def new_seed() -> int:
    seed = int(knobs.get("RUNG_SEED"))
    return seed if seed >= 0 else random.randrange(1, 2**31 - 1)


def climb(
    store: Store,
    problem: Problem,
    device: Device,
    solution_path: Path,
    on_rung: OnRung | None = None,
    on_run: OnRun | None = None,
    parent: str | None = None,
    only: Collection[str] | None = None,
    judge: Judge | None = None,
) -> Run:
    """Climb every rung for one solution (or `only` those named, the others SKIPPED saying so),
    storing each as it ends; return the finished run. `judge`, one `describe_keeping` left
    running for this problem, is adopted rather than a new one started (and closed with the
    climb). Interrupted (Ctrl-C, SIGTERM), the run is stored INTERRUPTED with the rungs it
    finished and the interrupt goes on; an exception in the problem's own code raises ProblemError."""
    with _CLIMBING:
        try:
            return _climb(store, problem, device, solution_path, on_rung, on_run, parent, only, judge)
        finally:
            # Ended however the climb ends; one it never adopted (it stopped before) with its folder.
            if judge is not None and judge.hello.source is None:
                judge.discard()
            elif judge is not None:
                judge.close()


def _climb(
    store: Store,
    problem: Problem,
    device: Device,
    solution_path: Path,
    on_rung: OnRung | None,
    on_run: OnRun | None,
    parent: str | None,
    only: Collection[str] | None,
    judge: Judge | None,
) -> Run:
    left_out = skipped_rungs()
    data = solution_path.read_bytes()  # read once: hashed, stored and run as these bytes
    solution = Solution.from_bytes(solution_path, data, parent=parent)
    source = data.decode(errors="replace")
    first_look = precheck.load_verdict(solution_path.name, source)  # a syntax error, a missing extra
    gpu_only = gpu_only_backends(source) if first_look is None else []  # parsed only once it parses
    seed = new_seed()
    run = store.begin(problem.name, problem.path, solution, device, seed, environment(), source=source)
    run_dir = store.run_dir(run.id)
    hello = _hello(Path(problem.path), solution_path, source, run_dir, seed)
    confine.become_subreaper()
    before = set(confine.descendants(os.getpid()))  # an adopted judge's, not its solution's
    if judge is not None:
        judge.adopt(hello, run_dir / "logs")
    else:
        judge = Judge(hello, run_dir / "logs")
    results: dict[str, RungResult] = {}
    current = LADDER[0].name
    began = time.time()
    interrupted = False
    try:
        for spec in LADDER:
            current, began = spec.name, time.time()
            if spec.name in left_out:
                result = RungResult(spec.name, Status.SKIPPED, LEFT_OUT)
            elif only is not None and spec.name not in only:
                result = RungResult(spec.name, Status.SKIPPED, f"left out: only {', '.join(only)} asked")
            elif spec.name == "load" and first_look is not None:
                result = first_look
            else:
                result = _one(spec, results, device, judge, gpu_only, run.started)
            # A judge's rung says when it began there (after the judge's start); any other, here.
            result.began_s = round(result.began_s if result.began_s is not None else began - run.started, 4)
            results[spec.name] = result
            if spec.name == "load" and result.status == Status.OK:  # what its import used
                gpu_only = gpu_only_backends(source, result.metrics.get("backends"))
            store.add_rung(run, result)
            if on_rung:
                on_rung(run, result)
    except KeyboardInterrupt:
        stopped = RungResult(current, Status.INTERRUPTED, "interrupted before this rung ended")
        stopped.seconds, stopped.began_s = round(time.time() - began, 4), round(began - run.started, 4)
        store.add_rung(run, stopped)
        store.interrupt(run)
        interrupted = True
        raise
    finally:
        judge.close(at_once=interrupted)
        _kill_orphans(before)
    store.finish(run)
    if on_run:
        on_run(run)
    return run


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (`on_sigterm` installs the handler)."""


def on_sigterm() -> None:
    """From now on SIGTERM interrupts this process as Ctrl-C does, so a run in flight is stored
    INTERRUPTED rather than left half written."""

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted()

    signal.signal(signal.SIGTERM, interrupt)


def _kill_orphans(before: set[int]) -> None:
    """Kill what a candidate left behind that reached the controller (a subreaper): processes
    below this one that were not there when the climb began."""
    confine.kill_processes([p for p in confine.descendants(os.getpid()) if p not in before])
    confine.reap_zombies()


def skipped_rungs() -> set[str]:
    """The rungs RUNG_SKIP leaves out; UsageError for a name the ladder does not have."""
    names = {n.strip() for n in str(knobs.get("RUNG_SKIP")).split(",") if n.strip()}
    unknown = names - {spec.name for spec in LADDER}
    if unknown:
        raise UsageError(
            f"RUNG_SKIP names {', '.join(sorted(unknown))}: not a rung ({', '.join(s.name for s in LADDER)})"
        )
    return names


def gpu_only_backends(source: str, used: Any = None) -> list[str]:
    """The solution's backends whose kernels cannot run without a GPU: of those its import used
    (`used`, the load rung's `backends`) once it loaded, else from its import statements (none for
    a source that does not parse: load fails it)."""
    try:
        found = backends.detect_all(source)
    except SyntaxError:
        return []
    if isinstance(used, list):
        found = [b for b in backends.REGISTRY if b.BACKEND.value in used]
    return [b.BACKEND.value for b in found if not b.RUNS_ON_CPU]


def _cannot_run_here(spec: RungSpec, device: Device, gpu_only: list[str]) -> str:
    """Why `spec` cannot run on this machine, whatever the rungs before it said; '' if it can."""
    if device.kind == "cuda":
        return ""
    if spec.needs_gpu:
        return "no CUDA device on this machine"
    if spec.runs_kernels and gpu_only:
        return f"needs a GPU: {' and '.join(gpu_only)} solutions run only on CUDA devices"
    return ""


def _one(
    spec: RungSpec,
    results: dict[str, RungResult],
    device: Device,
    judge: Judge,
    gpu_only: list[str],
    run_started: float,
) -> RungResult:
    why_not = _cannot_run_here(spec, device, gpu_only)
    if why_not:
        return RungResult(spec.name, Status.SKIPPED, why_not)
    for need in spec.needs:
        got = results.get(need)
        if got is None or got.status != Status.OK:
            why = got.status.value if got else "not run"
            return RungResult(spec.name, Status.SKIPPED, f"needs {need}, which is {why}")
    implementation = rung_table.RUNGS[spec.name]
    if implementation.where == rung_table.CONTROLLER:
        return implementation.load()(results, device)
    limit = float(knobs.get("RUNG_TIMEOUT_S")) or spec.timeout_s
    start = time.perf_counter()
    try:
        # The judge enforces the limit on the solution; the controller's own is a backstop
        # for a judge stuck in the problem's code, with room for starting a solution process.
        reply = judge.call(spec.name, {"timeout_s": limit}, limit + JUDGE_GRACE_S)
        if "problem_error" in reply:
            raise ProblemError(str(reply["problem_error"]))
        result = RungResult.from_dict(reply)
        if isinstance(reply.get("began"), float):  # the Unix time the judge, on this machine, began it
            result.began_s = reply["began"] - run_started
        return result
    except ChildTimedOut as e:
        status, how, tail = (
            Status.TIMEOUT,
            f"still running after {limit:g} s; the judge was killed",
            e.stderr_tail,
        )
    except ChildCrashed as e:
        status, how, tail = Status.ERROR, e.how, e.stderr_tail
    metrics: dict[str, Any] = {"stderr_tail": tail}
    partial = judge.log_dir.parent / spec.name / "partial.jsonl"
    if partial.exists():
        metrics["measured_before"] = [
            json.loads(line) for line in partial.read_text().splitlines() if line.strip()
        ]
        how += f" ({len(metrics['measured_before'])} case(s) measured before, kept in metrics)"
    return RungResult(
        spec.name, status, how + _tail(tail), metrics, seconds=round(time.perf_counter() - start, 4)
    )


def _tail(stderr: str) -> str:
    words = last_words(stderr)
    return f"; stderr: {words}" if words else ""


def environment() -> dict[str, str]:
    """What the controller knows of this machine; the judge adds the GPU's side."""
    import importlib.metadata as md

    env = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("torch", "triton", "rung"):
        try:
            env[package] = md.version(package)
        except md.PackageNotFoundError:
            env[package] = "not installed"
    return env
