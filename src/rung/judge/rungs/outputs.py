"""Checking what a call returned against what the reference returned: kind, count, shape,
dtype, device. An output is a tensor or a tuple/list of tensors; the solution must return the
same structure. The solution process describes what it returned; the values the judge compares
are its own copies. Where the problem's own check decides (a call with `warn`: GPU MODE and
KernelBench unless RUNG_STRICT=1), another dtype, or another shape of as many elements, is a
warning and the values go on to that check."""

from __future__ import annotations

import math
from typing import Any

import torch

from rung.common.trees import tensor_list
from rung.judge.rungs.outcome import Failed

LENIENT = "the problem's own check decides; RUNG_STRICT=1 fails it"


def describe(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def matched(called: Any, expected: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs (got, expected) of tensors; Failed when kind, count, shape, dtype or device differ."""
    want = tensor_list(expected)
    if want is None:
        raise Failed(f"the reference returned {describe(expected)}; rung compares tensors only")
    report = called.report
    single = isinstance(expected, torch.Tensor)
    if not report.outputs or single != (report.returned == "tensor") or len(report.outputs) != len(want):
        raise Failed(f"returned {_returned(report)}; expected {describe(expected)}")
    warn = getattr(called, "warn", None)
    pairs = []
    for i, (meta, w, out) in enumerate(zip(report.outputs, want, called.outs, strict=True)):
        which = "" if single else f"output {i}: "
        if tuple(meta.shape) != tuple(w.shape):
            problem = f"{which}shape {tuple(meta.shape)}, expected {tuple(w.shape)}"
            if warn is None or math.prod(meta.shape) != w.numel():
                raise Failed(problem)
            warn("shape", f"{problem} ({LENIENT})")
            w = w.reshape(tuple(meta.shape))
        if meta.dtype != str(w.dtype).removeprefix("torch."):
            problem = f"{which}dtype torch.{meta.dtype}, expected {w.dtype}"
            if warn is None:
                raise Failed(problem)
            warn("dtype", f"{problem} ({LENIENT})")
        if meta.device != str(w.device):
            raise Failed(f"{which}on {meta.device}, expected {w.device}")
        if out is None:
            raise Failed(f"{which}could not be copied out of the solution process")
        pairs.append((out, w))
    return pairs


def _returned(report: Any) -> str:
    if not report.outputs:
        return str(report.returned)  # "None", "a dict", "a tuple of 2"
    if report.returned == "tensor":
        m = report.outputs[0]
        return f"a torch.{m.dtype} tensor of shape {tuple(m.shape)}"
    return f"a {report.returned}"
