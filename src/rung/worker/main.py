"""The worker process: set up, then answer requests on the private channel until it closes.

    python -m rung.worker.main REQUEST_FD RESULT_FD

The first message is the hello (problem, solution, run folder, seed, token). Each request names
an op: `describe` (the problem and this device) or a rung in `rung.rungs.WORKER_RUNGS`.
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import Any

from rung.worker.channel import Channel, ChannelClosed


def die_with_parent() -> None:
    """Linux: the kernel kills this worker when the controller dies, even mid-hang."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def main(argv: list[str]) -> int:
    die_with_parent()
    channel = Channel(int(argv[0]), int(argv[1]))
    hello = channel.recv()
    token = hello.pop("token")

    from rung.worker.session import configure_process

    configure_process(int(hello.get("cpu_memory_mb", 0)), interpret=bool(hello.get("interpret", True)))

    from rung.worker.session import Session

    session = Session(hello, warm_profiler=True)  # not under ncu: it and CUPTI exclude each other
    while True:
        try:
            request = channel.recv()
        except ChannelClosed:
            return 0
        result = handle(session, request["op"], request.get("params", {}))
        channel.send({"token": token, "result": result})


def handle(session: Any, op: str, params: dict[str, Any]) -> dict[str, Any]:
    from rung.errors import ProblemError
    from rung.rungs import WORKER_RUNGS
    from rung.rungs.outcome import Failed, Skipped
    from rung.spec import RungResult, Status

    if op == "ceilings":
        from rung.ceilings import measure

        return {"ceilings": measure()}
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
    start = time.perf_counter()
    try:
        result = WORKER_RUNGS[op](session, params)
    except Failed as e:
        result = RungResult(op, Status.FAILED, e.message, e.metrics)
    except Skipped as e:
        result = RungResult(op, Status.SKIPPED, e.message, e.metrics)
    except ProblemError as e:
        result = RungResult(op, Status.ERROR, f"problem: {e}")
    except MemoryError as e:
        result = RungResult(op, Status.ERROR, f"out of memory: {session.where(e)}")
    except BaseException as e:  # the solution's own exceptions, SystemExit included
        traceback.print_exc()
        result = RungResult(op, Status.ERROR, session.where(e))
    result.seconds = round(time.perf_counter() - start, 4)
    return result.to_dict()


def describe_device(session: Any) -> Any:
    import torch

    from rung.spec import Device

    if session.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        return Device(
            kind="cuda",
            name=props.name,
            arch=f"sm_{props.major}{props.minor}",
            memory_bytes=int(props.total_memory),
            driver=_driver_version(),
        )
    import os
    import platform

    return Device(kind="cpu", name=f"cpu ({platform.machine()}, {os.cpu_count()} cores, no CUDA)")


def _driver_version() -> str:
    import subprocess

    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return "unknown"
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else "unknown"


def _asdict(obj: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(obj)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
