"""The judge process: set up, then answer the controller's requests until the channel closes.

    python -m rung.judge.main REQUEST_FD RESULT_FD

The first message is the hello (problem, the solution's source as the controller read it, run
folder, seed, token). Each request names an op: `describe` (the problem and this device),
`ceilings`, `device`, `adopt` (a judge started with no solution takes one, with a hello of its
own), or a rung in `rung.judge.rungs.JUDGE_RUNGS`, with its time limit; a rung's answer is its
RungResult with `began`, the Unix time it began here (the runner makes it the rung's `began_s`:
the time before it is the judge's own start). The judge is not dumpable, and is the subreaper of
its solution processes: what they leave behind is killed when a rung ends and when the judge
does. Exceptions of the problem's code are the problem's fault (ProblemError); the solution's
are its own (ERROR, TIMEOUT), never the judge's.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

from rung.common.channel import Channel, ChannelClosed
from rung.common.logcap import last_words
from rung.common.messages import JudgeHello

if TYPE_CHECKING:
    from rung.judge.session import Session
    from rung.judge.solution_process import SolutionProcess
    from rung.spec import Device, RungResult, Status


def main(argv: list[str]) -> int:
    from rung.common import confine

    confine.die_with_parent()
    confine.make_undumpable()
    confine.become_subreaper()
    channel = Channel(int(argv[0]), int(argv[1]))
    first = channel.recv()
    token = first.pop("token")
    hello = JudgeHello.from_dict(first)
    early = _launch_solution(hello)
    _ahead_of_compile(hello)

    from rung.judge.session import Session

    session = Session(hello, early)
    try:
        while True:
            try:
                request = channel.recv()
            except ChannelClosed:
                session.close()
                # All is said and cleaned up: exit without the interpreter's teardown (torch's,
                # about a second), which the controller would wait out before the next check.
                sys.stderr.flush()
                os._exit(0)
            if request["op"] == "adopt":
                session = adopt(session, JudgeHello.from_dict(request["params"]["hello"]))
                result = {"adopted": True}
            else:
                result = handle(session, request["op"], request.get("params", {}))
            session.reap()
            channel.send({"token": token, "result": result})
    finally:
        session.close()


def adopt(session: Session, hello: JudgeHello) -> Session:
    """A session for the solution `hello` brings, in place of `session`, a judge's that holds none
    (started to describe the problem): the problem it loaded is kept, the start-up it paid is
    not paid again. A judge that already holds a solution never takes another."""
    from rung.judge.session import Session

    if session.source is not None:
        raise RuntimeError("this judge already holds a solution")
    session.close()
    adopted = Session(hello, _launch_solution(hello))
    if adopted.problem_path == session.problem_path:
        adopted.reuse_problem(session)
    return adopted


def _ahead_of_compile(hello: JudgeHello) -> None:
    """compile's meta inputs import torch._dynamo on first use (1.6 s on the CPU): imported on a
    thread from the judge's start, while it mostly waits on its processes, it is not paid inside
    compile; only for a solution compile builds (a kernel language's, not plain torch's: the
    thread contends with the judge's own work), told by the controller while none is held."""
    from rung import backends

    builds = (
        hello.builds if hello.source is None else backends.detect(hello.source).compile_solution is not None
    )
    if builds:
        threading.Thread(target=importlib.import_module, args=("torch._dynamo",), daemon=True).start()


def _launch_solution(hello: JudgeHello) -> SolutionProcess | None:
    """Start the solution process before this one imports torch, so the two start-ups overlap
    (a judge holding none yet starts the fork server its solution will be forked from)."""
    if hello.source is None:
        from rung.judge import fork_server

        fork_server.start_ahead()
        return None
    from pathlib import Path

    from rung.judge.solution_process import SolutionProcess
    from rung.judge.start import solution_start, write_source

    proc = SolutionProcess(*solution_start(hello, write_source(hello), True), Path(hello.run_dir) / "logs")
    proc.launch()
    return proc


def handle(session: Session, op: str, params: dict[str, Any]) -> dict[str, Any]:
    import torch

    from rung.common.child import ChildCrashed, ChildTimedOut
    from rung.errors import ProblemError
    from rung.judge.rungs import JUDGE_RUNGS
    from rung.judge.rungs.bench_checks import TimedCallRaised
    from rung.judge.rungs.outcome import Failed, Skipped
    from rung.judge.session import SolutionRaised
    from rung.spec import RungResult, Status

    if op == "ceilings":
        from rung.judge.ceilings import measure

        found = measure()
        torch.cuda.empty_cache()  # this judge may climb a solution next: the memory is the solution's
        return {"ceilings": found}
    if op == "device":
        return {"device": _asdict(describe_device(session))}
    if op == "describe":
        try:
            return {
                "problem": _asdict(session.problem.describe()),
                "device": _asdict(describe_device(session)),
            }
        except ProblemError as e:
            return {"error": str(e)}
    start, began = time.perf_counter(), time.time()
    session.timeout_s = float(params.get("timeout_s", 120.0))
    session.warnings.clear()
    session.at = ""
    try:
        result = JUDGE_RUNGS[op](session, params)
    except Failed as e:
        result = RungResult(op, Status.FAILED, e.message, e.metrics)
    except Skipped as e:
        result = RungResult(op, Status.SKIPPED, e.message, e.metrics)
    except (SolutionRaised, TimedCallRaised) as e:
        result = RungResult(op, Status.ERROR, str(e))
    except ChildTimedOut as e:
        result = _lost(
            session,
            op,
            Status.TIMEOUT,
            f"still running after {e.seconds:g} s{_at(session)}; the solution process was killed",
            e.stderr_tail,
        )
    except ChildCrashed as e:
        result = _lost(session, op, Status.ERROR, e.how + _at(session), e.stderr_tail)
    except ProblemError as e:  # the problem's own code raised: not the solution's fault
        return {"problem_error": str(e)}
    except torch.OutOfMemoryError as e:  # whose memory it was is what a reader needs to know
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        result = RungResult(
            op, Status.ERROR, f"rung's judge ran out of GPU memory{gpu_memory_held()}: {first}"
        )
    except Exception as e:  # the judge's own failure: a bug of rung's, or an answer it could not read
        traceback.print_exc()
        result = RungResult(op, Status.ERROR, f"rung's judge failed: {type(e).__name__}: {e}")
    result.seconds = round(time.perf_counter() - start, 4)
    from rung.judge.artifacts import keep_result

    result = keep_result(session.run_dir, result)  # what the solution wrote leaves its scratch once, here
    _attach_warnings(result, list(session.warnings.values()))
    return {**result.to_dict(), "began": began}


def _attach_warnings(result: RungResult, warnings: list[str]) -> None:
    """What rung's stricter rules found where the problem's own check decided: beside the
    verdict, in the message and the figures, never in place of it."""
    if warnings:
        result.metrics["warnings"] = warnings
        result.message = "\n".join([result.message, *(f"warning: {w}" for w in warnings)])


def _at(session: Session) -> str:
    return f" in {session.at}" if session.at else ""


def _lost(session: Session, op: str, status: Status, how: str, tail: str) -> RungResult:
    """A rung whose solution process crashed or hung: what it measured before is kept."""
    import json

    from rung.spec import RungResult

    metrics: dict[str, Any] = {"stderr_tail": tail}
    partial = session.run_dir / op / "partial.jsonl"
    if partial.exists():
        metrics["measured_before"] = [json.loads(ln) for ln in partial.read_text().splitlines() if ln.strip()]
        how += f" ({len(metrics['measured_before'])} case(s) measured before, kept in metrics)"
    return RungResult(op, status, how + _last_line(tail), metrics)


def gpu_memory_held() -> str:
    """Who held the GPU's memory when the judge ran out of it: this judge's allocator, and the
    rest (the solution process's buffers and anything else on the GPU); "" without CUDA."""
    import torch

    try:
        free, total = torch.cuda.mem_get_info()
        judge = torch.cuda.memory_reserved()
    except Exception:  # no CUDA here, or a context that cannot answer
        return ""
    gib = 2**30
    others = max(0, total - free - judge)
    return (
        f" (the judge held {judge / gib:.1f} GiB, the solution process and everything else "
        f"{others / gib:.1f} GiB, of {total / gib:.1f} GiB)"
    )


def _last_line(stderr: str) -> str:
    words = last_words(stderr)
    return f"; stderr: {words}" if words else ""


def describe_device(session: Session) -> Device:
    import torch

    from rung.judge import gpu_facts
    from rung.judge.clocks import cuda_uuid
    from rung.spec import Device

    if session.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        facts = gpu_facts.read(cuda_uuid())
        return Device(
            kind="cuda",
            name=props.name,
            arch=f"sm_{props.major}{props.minor}",
            memory_bytes=int(props.total_memory),
            driver=str(facts.get("driver") or "unknown"),
            nvml=facts,
        )
    import os
    import platform

    return Device(
        kind="cpu",
        name=f"cpu ({platform.machine()}, {os.cpu_count()} cores, no CUDA)",
        nvml=gpu_facts.unavailable("no CUDA device in this judge: the run is on the CPU"),
    )


def _asdict(obj: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(obj)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
