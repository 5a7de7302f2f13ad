"""Which inputs of a destination-passing problem are its output buffers, found by running the
reference on the judge's side.

GPU MODE problems pass the output in as an input and the intended solution writes it and returns
it. Their references do not all say so: vectorsum's writes its buffer and returns it, but
matmul's, conv2d's and prefixsum's return a new tensor and never touch the buffer they were
given. So an input leaf is a designated output when the reference returns it or a view of it,
writes into it, or returns a tensor of its shape while ignoring what it holds (filled with the
harness's poison, the answer stays the same). A leaf the answer depends on is a real input
whatever its shape: a solution that returns it, or a view of it, is still caught as an alias.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from rung.common.poison import poison
from rung.common.trees import clone_tree, leaves, shares_memory, tensor_list


def designated_outputs(reference: Callable[[Any], Any], data: Any) -> set[int]:
    """Indices (in `leaves` order) of the leaves of `data` that are output buffers. `data` itself
    is left as it was: the reference runs on copies."""
    clone = clone_tree(data)
    before = [t.clone() for t in leaves(clone)]
    outs = tensor_list(reference(clone)) or []
    found = {
        i
        for i, (leaf, was) in enumerate(zip(leaves(clone), before, strict=True))
        if any(shares_memory(o, leaf) for o in outs) or not _same(leaf, was)
    }
    shapes = {tuple(o.shape) for o in outs}
    for i, leaf in enumerate(leaves(data)):
        if i not in found and tuple(leaf.shape) in shapes and _ignored(reference, data, i, outs):
            found.add(i)
    return found


def _ignored(reference: Callable[[Any], Any], data: Any, i: int, outs: list[torch.Tensor]) -> bool:
    """The reference's answer is the same with leaf i filled with poison (a NaN for floats,
    which spreads to whatever reads it)."""
    trial = clone_tree(data)
    poison(leaves(trial)[i])
    again = tensor_list(reference(trial)) or []
    return len(again) == len(outs) and all(_same(a, b) for a, b in zip(again, outs, strict=True))


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal in shape and value, NaNs equal to NaNs; a reference may sum in another order on a
    second run (atomics), so floats are compared closely rather than bit for bit."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(torch.equal(a, b))
