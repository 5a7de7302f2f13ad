"""The solution process: confine itself, import one solution, call it when the judge asks.

    python -m rung.solution.main REQUEST_FD RESULT_FD

Started by the judge (an isolated interpreter, in a folder no solution can write), or forked from
the fork server (`rung.solution.forked`, which imported torch once), with an environment built
from an allow-list, sent whole as the first message. The next message names the
solution's source (a copy the judge wrote, of the very bytes that were hashed and stored), the
format's entry point, the helper files the format shares with solutions, the scratch folder and
what it may read. Before the solution is imported (started fresh, before torch too), the
process confines itself (`rung.common.confine`): it may read the Python installation, rung, its source and the shared helpers,
write only its scratch folders, signal and trace no process outside itself. It holds no
reference, no expected value, no seed and no verdict: every answer is a figure or a description
of what the solution did, as JSON, and the judge decides.

Requests: alloc (shared buffers), configure, load, call, bench, compile, harm; each may carry
buffers to free first.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

from rung.common.channel import Channel, ChannelClosed
from rung.common.messages import SolutionStart

CACHE_KEPT_BYTES = 2**30  # freed memory the allocator may keep for the next request


def readable_paths(start: SolutionStart) -> list[Path]:
    """What the solution may read: the Python installation, rung itself, its own source, the
    helpers its format shares with it."""
    import rung

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    paths |= {p for p in sys.path if p and Path(p).is_dir() and "site-packages" in p}
    paths.add(str(Path(rung.__file__).resolve().parents[1]))
    paths.add(start.source)
    paths |= set(start.lib_dirs)
    paths |= set(start.tool_dirs)
    paths |= compiler_dirs()
    return sorted(Path(p) for p in paths if p)


def compiler_dirs() -> set[str]:
    """Where the C compiler lives (Triton builds its launcher with it; some images keep it
    outside /usr, as /opt/gcc)."""
    found = {shutil.which("cc") or "", shutil.which("gcc") or ""}
    return {str(Path(p).resolve().parents[1]) for p in found if p}


def writable_paths(start: SolutionStart) -> list[Path]:
    return [Path(p) for p in (start.scratch, *start.caches)]


def main(argv: list[str]) -> int:
    from rung.common import confine

    confine.die_with_parent()
    return serve(Channel(int(argv[0]), int(argv[1])))


def serve(channel: Channel) -> int:
    """Everything a solution process does, started fresh (`main`) or forked from the fork server
    (`rung.solution.forked`): take its environment and start message, confine itself, then enter
    its scratch folder and answer requests until the channel closes."""
    from rung.common import confine

    first = channel.recv()
    if "environment" in first:  # set whole, as the judge built it from the allow-list
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in first["environment"].items()})
        first = channel.recv()
    token = first.pop("token")
    start = SolutionStart.from_dict(first)
    confine.check_imports(writable_paths(start))
    if start.confine:
        confinement = confine.confine_self(readable_paths(start), writable_paths(start)).to_dict()
    else:
        confinement = {"filesystem": "not confined: RUNG_CONFINE=0"}
    os.chdir(start.scratch)  # started in a folder no solution can write; its own only once confined
    configure_process(start.cpu_memory_mb, start.interpret)

    from rung.solution.harness import Harness

    harness = Harness(start)
    warmup = None
    if harness.device == "cuda" and start.warm_profiler:
        from rung.solution.profiler_warmup import ProfilerWarmup

        warmup = ProfilerWarmup()
        harness.own_threads.add(warmup.ident)
    channel.send({"token": token, "result": {"confinement": confinement, "device": harness.device}})
    from rung.solution.requests import handle

    while True:
        try:
            request = channel.recv()
        except ChannelClosed:
            return 0
        began = time.perf_counter()
        harness.exporter.forget_handles()
        for key in request.get("free", []):
            harness.exporter.free(int(key))
        if request.get("free"):
            release_cache(harness.device)
        result = handle(harness, warmup, request["op"], request.get("params", {}))
        result["seconds"] = round(time.perf_counter() - began, 4)
        channel.send({"token": token, "result": result})


def release_cache(device: str) -> None:
    """What torch's allocator keeps of freed memory beyond a GiB, back to the GPU: the judge shares
    the GPU and needs room for its float64 references (of 6 GiB tensors, in KernelBench)."""
    if device != "cuda":
        return
    import torch

    if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > CACHE_KEPT_BYTES:
        torch.cuda.empty_cache()


def configure_process(cpu_memory_mb: int, interpret: bool) -> None:
    """On a machine without CUDA: Triton's interpreter (unless this process only builds kernels)
    and a cap on the address space."""
    import torch

    _restart_numpy_threads()
    if not torch.cuda.is_available():
        if interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        if cpu_memory_mb > 0 and sys.platform.startswith("linux"):
            import resource

            limit = cpu_memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _restart_numpy_threads() -> None:
    """numpy's OpenBLAS pool, running again where a fork stopped it (OpenBLAS's own fork handler
    does), as a fresh interpreter's runs from numpy's import on: the judge counts this process's
    threads before the solution is imported, and a pool the solution's first BLAS call restarted
    later would be taken for the solution's thread. Started after confinement, as every thread."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        ones = numpy.ones((256, 256))  # large enough for OpenBLAS to use its threads
        ones @ ones


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
