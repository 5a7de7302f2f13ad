"""The names of the GPU kernels one call ran, as CUPTI reports them (through torch.profiler).

Guard's `kernel_launched` asks for them on a GPU: each backend recognises its own kernels by name
(`KernelBackend.owns_kernel`), so a CUDA C++, CuTe DSL or TileLang solution that only calls torch
is seen to launch none of its backend's kernels. The names are read from the profiler's Chrome
trace as bench's CUPTI pass reads them: the call runs in a `rung::call` range, and only the
kernels launched inside it count, not those of rung's own `rung::harness` ranges within it (the
poison fill of every output the solution allocates), nor copies and memsets.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from rung.common.cupti_trace import CALL, work_per_call


class KernelNames:
    """Inside it, where `on`, a CUDA profiler runs; after it, `names` holds each kernel launched,
    in launch order, repeats kept. A profiler that fails is rung's trouble, not the solution's:
    `error` says why and `names` stays empty, and the call goes on."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.names: list[str] = []
        self.error = ""
        self._profiler: Any = None
        self._call: Any = None

    def __enter__(self) -> KernelNames:
        if self.on:
            try:
                from torch.profiler import ProfilerActivity, profile, record_function

                # CPU activity too: the host ranges and launches that tell whose kernel is whose
                self._profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                self._profiler.__enter__()
                self._call = record_function(CALL)
                self._call.__enter__()
            except Exception as e:
                self._profiler, self.error = None, f"{type(e).__name__}: {e}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._profiler is None:
            return
        try:
            if self._call is not None:
                self._call.__exit__(*exc)
            self._profiler.__exit__(*exc)
            self.names = _kernels(self._profiler)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"


def _kernels(profiler: Any) -> list[str]:
    fd, path = tempfile.mkstemp(suffix=".trace.json")
    os.close(fd)
    try:
        profiler.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    return [
        str(e["name"]) for inside in work_per_call(events) or [] for e in inside if e.get("cat") == "kernel"
    ]
