"""Naming a precision choice: a correctness failure whose size is what TF32 gives.

torch runs float32 convolutions in TF32 by default (cuDNN; `torch.backends.cudnn.conv.
fp32_precision`), and matmuls too where a program asks. A reference that turns it off (GPU MODE's
DeterministicContext in conv2d) or runs in float64 (rung's) then differs from a solution that
leaves it on by about TF32's rounding, 2^-11 of each operand: a library default, not a wrong
kernel, and the message should say so.

When a check fails, the judge emulates TF32 rather than re-running with it on (which a reference
that sets its own flags would undo, and which a CPU does not have): the reference runs again on
its float32 inputs cut to TF32's 10-bit mantissa, in float64, so the products are of TF32
operands and the sums exact. It runs twice, the operands rounded to nearest (a kernel that
converts with cvt.rna) and truncated (a tensor core handed float32 ignores the low 13 bits):
truncation shrinks every operand, so its error carries a bias the size of TF32's ulp (3.6 times
the other's on a small convolution, tests/test_tf32.py), too far apart for one emulation to stand
for both. Where the reference does matmuls or convolutions (FlopCounterMode sees them) and the
solution's norm-wise error lies between the smaller emulation's over RATIO and the larger's times
RATIO, the failure is named as TF32's. A kernel computing in fp16 has that size of error too (the
same 10-bit mantissa); either way it is a precision choice, and the verdict stands. Naming it is
a courtesy: an emulation that does not fit in the GPU's memory names nothing, and the verdict is
what it was.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rung.common.trees import leaves, map_tensors, tensor_list

if TYPE_CHECKING:
    from rung.judge.session import Session

RATIO = 4.0
DROPPED_BITS = 13  # float32 keeps 23 mantissa bits, TF32 10


def to_tf32(t: torch.Tensor, truncate: bool = False) -> torch.Tensor:
    """A float32 tensor cut to TF32's precision: to nearest, ties to even, or truncated toward
    zero (non-finite kept either way)."""
    bits = t.contiguous().view(torch.int32)
    if not truncate:
        half = (1 << (DROPPED_BITS - 1)) - 1
        bits = bits + half + ((bits >> DROPPED_BITS) & 1)
    cut = (bits & ~((1 << DROPPED_BITS) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(t), cut, t)


def explain(session: Session, inputs: tuple[Any, ...], got: list[torch.Tensor], precise: Any) -> str:
    """'' or a sentence naming TF32 as the cause of a failed check of `got` against `precise`."""
    if not any(t.dtype == torch.float32 for t in leaves(inputs)):
        return ""
    counter = FlopCounterMode(display=False)
    emulated = []
    try:
        for truncate in (False, True):
            cut = map_tensors(inputs, partial(_cut, truncate=truncate))
            with torch.no_grad(), counter:
                emulated.append(tensor_list(session.reference(cut, precise=True)) or [])
    except torch.OutOfMemoryError:
        del emulated
        torch.cuda.empty_cache()
        return ""
    ops = _matrix_ops(counter)
    exact = tensor_list(precise) or []
    for g, nearest, truncated, r in zip(got, *emulated, exact, strict=False):
        if g.is_floating_point() and g.shape == r.shape:
            said = message(ops, _norm_rel(g, r), (_norm_rel(nearest, r), _norm_rel(truncated, r)))
            if said:
                return said
    return ""


def _cut(t: torch.Tensor, truncate: bool) -> torch.Tensor:
    return to_tf32(t, truncate) if t.dtype == torch.float32 else t


def message(ops: list[str], solution_err: float, tf32_errs: tuple[float, float]) -> str:
    """The sentence, where the solution's error is of TF32's size (`tf32_errs`: the emulations'
    errors, rounded to nearest and truncated) and there are ops to blame."""
    low, high = min(tf32_errs), max(tf32_errs)
    if not ops or not low > 0 or not low / RATIO <= solution_err <= high * RATIO:
        return ""
    return (
        f"the reference ran without TF32; the solution's {' and '.join(ops)} likely ran in TF32: its "
        f"norm-wise error {solution_err:.1e} is the size TF32's rounding gives ({tf32_errs[0]:.1e} "
        f"to nearest, {tf32_errs[1]:.1e} truncated), a precision choice rather than a wrong kernel "
        "(torch.backends.cudnn.conv.fp32_precision and torch.backends.cuda.matmul.fp32_precision = "
        "'ieee' turn it off)"
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
