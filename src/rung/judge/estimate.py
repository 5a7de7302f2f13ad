"""A cost model estimated from the reference, for problems that give none (GPU MODE folders,
KernelBench files, native problems without `cost`), so every problem has a roofline.

FLOPs: counted by torch's FlopCounterMode while the reference runs once on the case's inputs in
their own dtypes. It has formulas for matmuls, convolutions and attention and counts elementwise
work as nothing, which is what a roofline of such a problem is about: its memory time decides.
Bytes: every input read once plus every output written once. A destination-passing buffer (GPU
MODE's `c`) counts once, as the output it is, and a model's weights (KernelBench) as inputs.
Wherever it is shown the cost says "estimated": a kernel may not need all of an input, so the
estimate can overcount, and the roofline never calls a case impossible from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rung.common.trees import clone_tree, leaves, tensor_list


def estimated_cost(
    reference: Callable[[Any], Any], inputs: Any, output_leaves: set[int], weight_bytes: int = 0
) -> dict[str, Any]:
    """{"flops", "bytes", "cost_estimated": True, "flops_by_op"} for one case's `inputs`."""
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = reference(clone_tree(inputs))  # a copy: the reference may write its output buffer
    drawn = leaves(inputs)
    read = sum(_nbytes(t) for i, t in enumerate(drawn) if i not in output_leaves)
    buffers = [t for i, t in enumerate(drawn) if i in output_leaves]
    written = sum(_nbytes(t) for t in buffers or tensor_list(out) or [])
    by_op = counter.get_flop_counts().get("Global", {})
    return {
        "flops": int(counter.get_total_flops()),
        "bytes": read + weight_bytes + written,
        "cost_estimated": True,
        "flops_by_op": {str(op).removeprefix("aten."): int(n) for op, n in by_op.items()},
    }


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
