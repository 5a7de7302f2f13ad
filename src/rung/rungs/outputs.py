"""Checking what a solution returned against what the reference returned: kind, shape, dtype.

An output is a tensor or a tuple/list of tensors; the solution must return the same structure.
"""

from __future__ import annotations

from typing import Any

import torch

from rung.rungs.outcome import Failed


def tensors(value: Any) -> list[torch.Tensor] | None:
    """The output as a list of tensors, or None when it is not a tensor or a sequence of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def describe(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def matched(got: Any, expected: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs (got, expected) of tensors; Failed when kind, count, shape or dtype differ."""
    want = tensors(expected)
    if want is None:
        raise Failed(f"the reference returned {describe(expected)}; rung compares tensors only")
    have = tensors(got)
    single = isinstance(expected, torch.Tensor)
    if have is None or (single and not isinstance(got, torch.Tensor)) or len(have) != len(want):
        raise Failed(f"returned {describe(got)}; expected {describe(expected)}")
    for i, (g, w) in enumerate(zip(have, want, strict=False)):
        which = "" if single else f"output {i}: "
        if tuple(g.shape) != tuple(w.shape):
            raise Failed(f"{which}shape {tuple(g.shape)}, expected {tuple(w.shape)}")
        if g.dtype != w.dtype:
            raise Failed(f"{which}dtype {g.dtype}, expected {w.dtype}")
    return list(zip(have, want, strict=False))
