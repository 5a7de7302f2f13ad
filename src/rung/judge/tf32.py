"""Naming a precision choice: a correctness failure whose size is what TF32 gives.

torch runs float32 convolutions in TF32 by default (cuDNN; `torch.backends.cudnn.conv.
fp32_precision`), and matmuls too where a program asks. A reference that turns it off (GPU MODE's
DeterministicContext in conv2d) or runs in float64 (rung's) then differs from a solution that
leaves it on by about TF32's rounding, 2^-11 of each operand: a library default, not a wrong
kernel, and the message should say so.

When a check fails, the judge emulates TF32 rather than re-running with it on (which a reference
that sets its own flags would undo, and which a CPU does not have): the reference runs again on
its float32 inputs rounded to TF32's 10-bit mantissa, in float64, so the products are of TF32
operands and the sums exact. Where the reference does matmuls or convolutions (FlopCounterMode
sees them) and the solution's norm-wise error is the size of the emulation's (within a factor of
RATIO either way), the failure is named as TF32's. A kernel computing in fp16 has that size of
error too (the same 10-bit mantissa); either way it is a precision choice, and the verdict stands.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rung.common.trees import leaves, map_tensors, tensor_list

RATIO = 4.0
DROPPED_BITS = 13  # float32 keeps 23 mantissa bits, TF32 10


def to_tf32(t: torch.Tensor) -> torch.Tensor:
    """A float32 tensor rounded to TF32's precision, to nearest, ties to even (non-finite kept)."""
    bits = t.contiguous().view(torch.int32)
    half = (1 << (DROPPED_BITS - 1)) - 1
    odd = (bits >> DROPPED_BITS) & 1
    rounded = ((bits + half + odd) & ~((1 << DROPPED_BITS) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(t), rounded, t)


def explain(session: Any, inputs: tuple[Any, ...], got: list[torch.Tensor], precise: Any) -> str:
    """'' or a sentence naming TF32 as the cause of a failed check of `got` against `precise`."""
    if not any(t.dtype == torch.float32 for t in leaves(inputs)):
        return ""
    rounded = map_tensors(inputs, lambda t: to_tf32(t) if t.dtype == torch.float32 else t)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        emulated = tensor_list(session.reference(rounded, precise=True)) or []
    ops = _matrix_ops(counter)
    exact = tensor_list(precise) or []
    for g, e, r in zip(got, emulated, exact, strict=False):
        if g.is_floating_point() and g.shape == r.shape:
            said = message(ops, _norm_rel(g, r), _norm_rel(e, r))
            if said:
                return said
    return ""


def message(ops: list[str], solution_err: float, tf32_err: float) -> str:
    """The sentence, where the solution's error is of TF32's size and there are ops to blame."""
    if not ops or not tf32_err > 0 or not tf32_err / RATIO <= solution_err <= tf32_err * RATIO:
        return ""
    return (
        f"the reference ran without TF32; the solution's {' and '.join(ops)} likely ran in TF32: its "
        f"norm-wise error {solution_err:.1e} is the size TF32's rounding gives ({tf32_err:.1e}), a "
        "precision choice rather than a wrong kernel (torch.backends.cudnn.conv.fp32_precision and "
        "torch.backends.cuda.matmul.fp32_precision = 'ieee' turn it off)"
    )


def _matrix_ops(counter: FlopCounterMode) -> list[str]:
    """What the reference did that TF32 applies to, in words: convolution, matmul, attention."""
    names = [str(op) for op in counter.get_flop_counts().get("Global", {})]
    kinds = {
        "convolution": any("conv" in n for n in names),
        "matmul": any("mm" in n for n in names),
        "attention": any("attention" in n for n in names),
    }
    return [k for k, present in kinds.items() if present]


def _norm_rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    r = ref.detach().to(a.device, torch.float64)
    d = a.detach().to(torch.float64) - r
    finite = torch.isfinite(d) & torch.isfinite(r)
    den = float(torch.linalg.vector_norm(torch.where(finite, r, 0.0)))
    return float(torch.linalg.vector_norm(torch.where(finite, d, 0.0))) / den if den > 0 else 0.0
