"""Whether a Triton solution's answer is made by its kernels' stores, judged from values alone.

On the CPU, Triton kernels run in the interpreter, where the harness can change every value a
kernel stores, each element by its own amount (`triton_backend.perturbed`). The judge calls once
so, and compares the output with the honest call's: an answer the kernels compute changes there,
element by element, by amounts that differ (a split-K whose partials torch sums changes too);
an answer torch computed while a kernel writes a gate value, or nothing at all, either does not
change or changes as one value would make it: every changed element the same, shifted by one
amount, or scaled by one factor. The launch count in the report plays no part: a count bumped by
hand with no kernel behind it changes nothing here.

What stays a claim: the perturbation is applied in the solution's own process; and a kernel that
copies an answer torch computed (or a branch on a gate that returns noise) passes it, as its
output does flow through the stores element by element (docs/SECURITY.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rung.common.trees import clone_tree
from rung.judge.observed import bits_differ
from rung.judge.rungs.outcome import Failed
from rung.judge.rungs.outputs import matched

if TYPE_CHECKING:
    from rung.judge.session import Session

# Fewer changed elements than this cannot tell one value's doing from many: not judged.
_FEW = 3


def not_through_stores(session: Session, inputs: Any, expected: Any, outs: list[torch.Tensor]) -> str:
    """'' where the answer changed element by element when every stored value was perturbed;
    otherwise what happened, for the guard's `kernel_launched`."""
    from rung.judge.session import SolutionRaised

    session.solution.request("perturb", {"seed": session.seed}, session.timeout_s)
    try:
        called = session.call(clone_tree(inputs), expected)
    except SolutionRaised as e:
        return f"the call raised when the Triton kernels' stored values were perturbed ({e})"
    session.release(called.placed)
    try:
        after = [g for g, _ in matched(called, expected)]
    except Failed as e:
        return f"perturbing the Triton kernels' stored values changed what the call returns: {e.message}"
    return one_value(outs, after)


def one_value(before: list[torch.Tensor], after: list[torch.Tensor]) -> str:
    """'' where some output changed element by element between the honest call (`before`) and the
    perturbed one (`after`), and none changed as one value would change it; else why not."""
    moved = False
    for j, (o, p) in enumerate(zip(before, after, strict=False)):
        which = "" if len(before) == 1 else f"output {j}: "
        mask = bits_differ(o, p)
        n = int(mask.sum())
        moved |= n > 0
        if n < _FEW or o.dtype == torch.bool:
            continue
        how = _explained(o[mask], p[mask])
        if how:
            return (
                f"{which}with every value the Triton kernels stored perturbed, element by element, the "
                f"{n} changed elements {how}: one stored value (a gate), not the kernels' arithmetic, "
                "decides the answer"
            )
    if not moved:
        return (
            "the output did not change when every value the Triton kernels stored was perturbed: "
            "the kernels do no work the answer needs"
        )
    return ""


def _explained(o: torch.Tensor, p: torch.Tensor) -> str:
    """How one value explains the change from `o` to `p` (the changed elements only), or ''."""
    if not bool(bits_differ(p, p.reshape(-1)[:1].expand_as(p)).any()):
        return "all took one value"
    o64, p64 = o.double(), p.double()
    tol = 4 * (torch.finfo(o.dtype).eps if o.is_floating_point() else 0.0)
    d = p64 - o64
    if bool(torch.isfinite(d).all()) and _same(d, tol):
        return "all moved by one amount"
    if o.is_floating_point() and bool((o64 != 0).all()):
        r = p64 / o64
        if bool(torch.isfinite(r).all()) and _same(r, tol):
            return "were all scaled by one factor"
    return ""


def _same(x: torch.Tensor, tol: float) -> bool:
    return float(x.max() - x.min()) <= tol * float(x.abs().max())
