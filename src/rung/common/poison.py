"""Poisoned allocations: uninitialised tensors a solution allocates come back full of a marker.

While a solution runs under `poisoned_allocations()`, `torch.empty`, `empty_like`,
`empty_strided` and `Tensor.new_empty` return tensors filled with a NaN carrying a payload (or
an unlikely integer), so an output element the kernel never wrote is found afterwards by its bit
pattern, told apart from a NaN the kernel computed. int8, uint8 and bool have no pattern rare
enough and are filled but not detected. The fill is rung's work inside the solution's call: it
runs in a `rung::harness` range, so no trace of the call counts it as the solution's kernel.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.profiler import record_function

from rung.common.cupti_trace import HARNESS

# dtype -> (integer view dtype, bit pattern)
PATTERNS: dict[torch.dtype, tuple[torch.dtype, int]] = {
    torch.float64: (torch.int64, 0x7FF8DEADBEEFDEAD),
    torch.float32: (torch.int32, 0x7FC0DEAD),
    torch.float16: (torch.int16, 0x7E5B),
    torch.bfloat16: (torch.int16, 0x7FDB),
    torch.int64: (torch.int64, 0x5A5A5A5A5A5A5A5A),
    torch.int32: (torch.int32, 0x5A5A5A5A),
    torch.int16: (torch.int16, 0x5A5A),
}


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill `t` with its dtype's marker (in place) and return it."""
    if t.numel() == 0:
        return t
    with record_function(HARNESS):
        _fill(t)
    return t


def _fill(t: torch.Tensor) -> None:
    if t.dtype in PATTERNS:
        view_dtype, bits = PATTERNS[t.dtype]
        t.view(view_dtype).fill_(bits)
    elif t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(0x5A)


def poisoned_mask(t: torch.Tensor) -> torch.Tensor:
    """Where `t` still holds the marker; all False for dtypes without a detectable one."""
    if t.dtype not in PATTERNS or t.numel() == 0:
        return torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    view_dtype, bits = PATTERNS[t.dtype]
    return t.contiguous().view(view_dtype) == bits


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    saved: dict[str, Any] = {
        "empty": torch.empty,
        "empty_like": torch.empty_like,
        "empty_strided": torch.empty_strided,
    }
    new_empty = torch.Tensor.new_empty

    def wrap(fn: Any) -> Any:
        def poisoned(*args: Any, **kwargs: Any) -> Any:
            return poison(fn(*args, **kwargs))

        return poisoned

    try:
        for name, fn in saved.items():
            setattr(torch, name, wrap(fn))
        torch.Tensor.new_empty = wrap(new_empty)  # type: ignore[method-assign]
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = new_empty  # type: ignore[method-assign]
