"""guard: the ways a kernel can look right without being right, each checked on its own.

On the first test case: inputs unchanged by the call; the output neither an alias of an input nor
a tensor subclass or lazy object; for a Triton solution, a Triton kernel actually launched; the
same input twice gives the same bits; new values written into the same input tensors (same
addresses, same shapes) give the new answer, not a cached one; timing and comparison functions
not replaced; no thread left running. Every check runs; each one that fires is named.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from rung import backends
from rung.compare import compare
from rung.rungs.outcome import Failed
from rung.rungs.outputs import matched, tensors
from rung.spec import Backend, RungResult, Status
from rung.tolerance import Tolerance
from rung.worker.trees import clone_tree, leaves


def guard(session: Any, params: dict[str, Any]) -> RungResult:
    case = session.problem.tests[0]
    backend = backends.detect(session.solution_path.read_text(errors="replace")).BACKEND
    checks: dict[str, str] = {}
    fired: list[str] = []

    def verdict(name: str, problem: str) -> None:
        checks[name] = "fired" if problem else "ok"
        if problem:
            fired.append(f"{name}: {problem}")

    threads_before = threading.active_count()
    inputs = session.inputs(case, session.seed)
    snapshot = clone_tree(inputs)
    expected = session.reference(inputs, precise=False)
    first = session.call(inputs)
    pairs = matched(first.value, expected)
    outs = [g for g, _ in pairs]

    skip = session.problem.output_leaves  # destination passing: those inputs are the outputs
    verdict("inputs_unchanged", _mutated(snapshot, inputs, skip))
    verdict("no_alias", _aliased(outs, inputs, skip))
    verdict(
        "plain_tensor",
        "; ".join(
            f"output is a {type(o).__name__}, not a torch.Tensor" for o in outs if type(o) is not torch.Tensor
        ),
    )
    if backend == Backend.TRITON:
        verdict("kernel_launched", "" if first.launches else "no Triton kernel was launched during the call")

    kept = [o.clone() for o in outs]
    second = session.call(clone_tree(snapshot))
    again = tensors(second.value) or []
    same_object = any(a is o for a, o in zip(again, outs, strict=False))
    verdict(
        "fresh_output",
        "the second call returned the very same tensor object as the first" if same_object else "",
    )
    verdict("deterministic", _differs(kept, again))

    if _refill(inputs, snapshot, expected, case, session):
        new_expected = session.reference(inputs, precise=False)
        new_precise = session.reference(inputs, precise=True)
        third = session.call(inputs)
        verdict("not_cached", _stale(third.value, new_expected, new_precise, kept, session))
    else:
        checks["not_cached"] = f"untested: {_REDRAWS} new inputs all gave the reference's first answer"

    patched = session.patched()
    verdict("functions_intact", f"replaced: {', '.join(patched)}" if patched else "")
    extra = threading.active_count() - threads_before
    verdict("no_stray_threads", f"{extra} thread(s) left running after 3 calls" if extra > 0 else "")

    metrics = {"checks": checks, "launches": first.launches}
    if fired:
        raise Failed("; ".join(fired), metrics)
    passed = sum(v == "ok" for v in checks.values())
    return RungResult("guard", Status.OK, f"{passed} checks passed", metrics)


def _bits_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Element mask where a and b differ, comparing NaNs by bits rather than by value."""
    if a.is_floating_point():
        return ~((a == b) | (torch.isnan(a) & torch.isnan(b)))
    return a != b


def _mutated(snapshot: Any, inputs: Any, skip: set[int]) -> str:
    for i, (before, after) in enumerate(zip(leaves(snapshot), leaves(inputs), strict=False)):
        if i in skip:
            continue
        changed = _bits_differ(before, after)
        if bool(changed.any()):
            at = tuple(int(x) for x in changed.nonzero()[0])
            return f"input {i} was modified in place ({int(changed.sum())} elements changed, first at {at})"
    return ""


def _aliased(outs: list[torch.Tensor], inputs: Any, skip: set[int]) -> str:
    def span(t: torch.Tensor) -> tuple[int, int]:
        s = t.untyped_storage()
        return s.data_ptr(), s.data_ptr() + s.nbytes()

    for j, o in enumerate(outs):
        lo, hi = span(o)
        for i, t in enumerate(leaves(inputs)):
            if i in skip:
                continue
            a, b = span(t)
            if t.device == o.device and lo < b and a < hi:
                return f"output {j} shares memory with input {i}"
    return ""


def _differs(first: list[torch.Tensor], again: list[torch.Tensor]) -> str:
    for a, b in zip(first, again, strict=False):
        if a.shape != b.shape:
            return "the same input gave outputs of different shapes"
        diff = _bits_differ(a, b)
        if bool(diff.any()):
            return f"the same input twice gave different results ({int(diff.sum())} elements differ)"
    return ""


_REDRAWS = 16


def _refill(inputs: Any, snapshot: Any, expected: Any, case: dict[str, Any], session: Any) -> bool:
    """Write new values into the original input tensors (same addresses), drawn with the next
    seeds until the reference's answer changes: on a tiny case (one int32 in -8..8) the next
    seed can give the same values, and a cached answer would then be right by chance.
    False, inputs restored, if no draw changes the answer."""
    before = tensors(expected) or []
    for k in range(1, _REDRAWS + 1):
        _overwrite(inputs, session.inputs(case, session.seed + k))
        after = tensors(session.reference(inputs, precise=False)) or []
        if _differs(before, after):
            return True
    _overwrite(inputs, snapshot)
    return False


def _overwrite(inputs: Any, fresh: Any) -> None:
    for target, new in zip(leaves(inputs), leaves(fresh), strict=False):
        if target.shape == new.shape:
            target.copy_(new)


def _stale(value: Any, expected: Any, precise: Any, old: list[torch.Tensor], session: Any) -> str:
    """Fires only for a cached answer: wrong for the new values, and bit for bit the old output.
    A merely wrong answer is the correct rung's to report."""
    try:
        got_list = [g for g, _ in matched(value, expected)]
    except Failed as e:
        return f"after new values at the same addresses: {e.message}"
    for got, ref, before in zip(got_list, tensors(precise) or [], old, strict=False):
        c = compare(got, ref, Tolerance.for_dtype(str(got.dtype), session.problem.tolerance))
        if not c.ok and got.shape == before.shape and not bool(_bits_differ(got, before).any()):
            return "new values written into the same input tensors gave the previous answer (output cached)"
    return ""
