"""guard: the ways a kernel can look right without being right, each checked on its own.

On the first test case, over several calls: inputs unchanged by every call and no output living
in an input's memory (the judge reads every input back after every call, `observed.py`; the
solution process's report of aliasing can only add to that); each output a plain torch.Tensor,
by its type itself, not its name; a kernel of the solution's backend actually launched (on a GPU
from the kernel names CUPTI reports, each backend recognising its own; on the CPU from Triton's
launch count) and, for Triton, doing work the answer needs (the answer wrong with its launches
skipped; on the CPU, the answer changing element by element when every value its kernels store
is perturbed, `stores.py`); the same input twice gives the same bits; no output a buffer an
earlier call returned and the solution kept (any number of calls back); new values written into
the same input tensors (same addresses, same shapes) give the new answer, not a cached one (and
where they do not, the same values in new tensors say whether it is a cache or an output that
ignores its input); timing and comparison functions not replaced; no thread running that was not
there before the solution was imported (counted by the judge in /proc). Every check runs; each
one that fires is named. What the solution process reports (launches, kernel names, types,
reuse, replaced functions) is a claim its code could rewrite: docs/SECURITY.md says which.
SKIPPED, before anything is built, when the first test case is too large for this machine
(case_size.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rung.common.poison import poisoned_mask
from rung.common.trees import clone_tree, tensor_list
from rung.judge import case_size, own_kernels
from rung.judge.compare import compare
from rung.judge.observed import ALIASED, MUTATED, bits_differ
from rung.judge.rungs.outcome import Failed
from rung.judge.rungs.outputs import matched
from rung.judge.rungs.stores import not_through_stores
from rung.judge.tolerance import Tolerance
from rung.spec import Backend, RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session


def guard(session: Session, params: dict[str, Any]) -> RungResult:
    case, size = case_size.first_test_case(session)
    session.at = f"test case {case}"  # its inputs and fresh ones alike
    kernel_backends = own_kernels.languages(session)
    checks: dict[str, str] = {}
    fired: list[str] = []
    calls: list[Seen] = []  # every plain call: its name, report and the judge's input findings

    def verdict(name: str, problem: str) -> None:
        checks[name] = "fired" if problem else "ok"
        if problem:
            fired.append(f"{name}: {problem}")

    inputs = session.inputs(case, session.seed)
    expected = session.reference(inputs, precise=False)
    first = session.call(inputs, expected, kernel_names=bool(kernel_backends))
    calls.append(Seen("the first call", first))
    pairs = matched(first, expected)
    outs = [g for g, _ in pairs]

    skip = session.problem.output_leaves  # destination passing: those inputs are the outputs
    verdict("plain_tensor", _not_plain(first.report))
    if kernel_backends and first.report.kernels_error:
        # Fails closed: a check that cannot tell whose kernels ran must not pass as if it could.
        verdict(
            "kernel_launched", f"the kernels the call ran could not be named ({first.report.kernels_error})"
        )
    elif kernel_backends:
        problem = _not_launched(session, kernel_backends, first.report)
        if not problem and first.report.launches:  # Triton's, which suppression skips
            problem = _no_work(session, inputs, expected)
        if not problem and session.device == "cpu" and Backend.TRITON.value in _names(kernel_backends):
            problem = not_through_stores(session, inputs, expected, outs)
        verdict("kernel_launched", problem)

    second = session.call(clone_tree(inputs), expected)
    calls.append(Seen("the second call (the same values)", second))
    verdict("deterministic", _differs(outs, [o for o in second.outs if o is not None]))
    session.release(second.placed)
    # A case's tensors are held here several times over (KernelBench's 4D matmul: 3 GiB an
    # output): what a later check does not read is let go before it allocates.
    del second, pairs, inputs

    drawn = _redraw(session, expected, case)
    del expected
    if drawn is not None:
        fresh, new_expected = drawn
        session.solution.refill(first.placed, fresh)
        third = session.call(fresh, new_expected, placed=first.placed)
        calls.append(Seen("the call on new values in the same tensors", third))
        stale = _stale(third, new_expected, fresh, outs, session)
        del third
        verdict("not_cached", stale and _name_stale(session, fresh, new_expected, outs, stale, calls))
    else:
        checks["not_cached"] = f"untested: {_REDRAWS} new inputs all gave the reference's first answer"
    session.release(first.placed)

    verdict(MUTATED, _found(calls, MUTATED))
    verdict(ALIASED, _found(calls, ALIASED) or _claimed_alias(calls, skip))
    verdict("fresh_output", _stale_object(calls))
    harm = session.harm()
    patched = list(harm.get("patched", []))
    verdict("functions_intact", f"replaced: {', '.join(patched)}" if patched else "")
    verdict("no_stray_threads", _stray_threads(session, harm))

    metrics = {"checks": checks, "launches": first.report.launches, **size}
    if first.report.kernels:
        known = own_kernels.known(session, kernel_backends)
        metrics["kernels"] = own_kernels.attributed(first.report.kernels, kernel_backends, known)
    if fired:
        raise Failed("; ".join(fired), metrics)
    passed = sum(v == "ok" for v in checks.values())
    return RungResult("guard", Status.OK, f"{passed} checks passed", metrics)


class Seen:
    """What the checks over every call keep of one: its name, its report, the judge's findings on
    its inputs (not its outputs or buffers, let go as soon as they are read)."""

    def __init__(self, name: str, called: Any) -> None:
        self.name, self.report, self.changed = name, called.report, called.changed


def _found(calls: list[Seen], check: str) -> str:
    """The judge's own first finding of `check` over every call, named with the call."""
    return next((f"{said} on {c.name}" for c in calls for kind, said in c.changed if kind == check), "")


def _claimed_alias(calls: list[Seen], skip: set[int]) -> str:
    """What the solution process itself reported of aliasing (a claim, which can only add)."""
    for c in calls:
        for j, m in enumerate(c.report.outputs):
            if m.alias_of_input is not None and m.alias_of_input not in skip:
                return f"output {j} shares memory with input {m.alias_of_input} on {c.name}"
    return ""


def _not_plain(report: Any) -> str:
    """Each output whose type is not torch.Tensor itself (a subclass, whatever its name)."""
    return "; ".join(
        f"output is a {m.type}{' (a subclass so named)' if m.type == 'Tensor' else ''}, not a torch.Tensor"
        for m in report.outputs
        if not m.plain
    )


def _stray_threads(session: Session, harm: dict[str, Any]) -> str:
    """Threads the judge counts in /proc that were not there before the solution was imported;
    where it cannot count them, the solution process's own count of Python threads, so labelled."""
    stray, why = session.threads.stray(session.solution.pid, named_are_libraries=session.device == "cuda")
    if stray:
        shown = ", ".join(stray[:5]) + (", ..." if len(stray) > 5 else "")
        return f"{len(stray)} thread(s) left running that were not there before the solution was imported: {shown}"
    claimed = int(harm.get("python_threads", 0)) if why else 0
    if claimed > 0:
        return f"{claimed} thread(s) left running, by the solution process's own count (a claim: {why})"
    return ""


def _names(kernel_backends: list[Any]) -> list[str]:
    return [b.BACKEND.value for b in kernel_backends]


def _not_launched(session: Session, kernel_backends: list[Any], report: Any) -> str:
    """A solution in a kernel language must launch a kernel of that language during the call: on a
    GPU one of its own (`own_kernels`) among the kernels CUPTI saw, not the launch count the
    solution's process keeps (a claim); on the CPU one Triton's interpreter ran (the only kernel
    language that runs there)."""
    if session.device == "cuda":
        return own_kernels.not_launched(
            report.kernels, kernel_backends, own_kernels.known(session, kernel_backends)
        )
    names = " or ".join(_names(kernel_backends))
    return "" if report.launches else f"no {names} kernel was launched during the call"


def _no_work(session: Session, inputs: Any, expected: Any) -> str:
    """A Triton kernel must matter: with every Triton launch skipped, the answer must no longer be
    right (a kernel that launches and does nothing while torch computes the answer is not a
    Triton solution)."""
    bare = session.call(clone_tree(inputs), expected, suppress=True)
    session.release(bare.placed)
    try:
        pairs = matched(bare, expected)
    except Failed:
        return ""
    precise = session.reference(inputs, precise=True)
    exact = tensor_list(precise) or []
    tolerance = session.problem.tolerance
    if all(
        compare(g, r, Tolerance.for_dtype(str(g.dtype), tolerance)).ok and not bool(poisoned_mask(g).any())
        for (g, _), r in zip(pairs, exact, strict=False)
    ):
        return "the output is right with every Triton launch skipped: the kernels do no work the answer needs"
    return ""


def _stale_object(calls: list[Seen]) -> str:
    """An output that is a tensor or buffer an earlier call returned and the solution kept, on any
    call (the solution process's own finding: a claim, docs/SECURITY.md)."""
    for c in calls:
        for m in c.report.outputs:
            if m.alias_of_input is not None:
                continue  # an input's own buffer: the format's output, or no_alias's finding
            if m.same_object_as_before:
                return f"{c.name} returned the very tensor object an earlier call returned"
            if m.reuses_earlier_output:
                return f"{c.name}'s output shares memory with an earlier call's output (a buffer kept and reused)"
    return ""


def _differs(first: list[torch.Tensor], again: list[torch.Tensor]) -> str:
    for a, b in zip(first, again, strict=False):
        if a.shape != b.shape:
            return "the same input gave outputs of different shapes"
        diff = bits_differ(a, b)
        if bool(diff.any()):
            return f"the same input twice gave different results ({int(diff.sum())} elements differ)"
    return ""


_REDRAWS = 16


def _redraw(session: Session, expected: Any, case: dict[str, Any]) -> tuple[Any, Any] | None:
    """New inputs drawn with the next seeds until the reference's answer changes, and that
    answer: on a tiny case (one int32 in -8..8) the next seed can give the same values, and a
    cached answer would then be right by chance. None if no draw changes the answer."""
    before = tensor_list(expected) or []
    for k in range(1, _REDRAWS + 1):
        fresh = session.inputs(case, session.seed + k)
        answer = session.reference(fresh, precise=False)
        if _differs(before, tensor_list(answer) or []):
            return fresh, answer
    return None


def _stale(called: Any, expected: Any, fresh: Any, old: list[torch.Tensor], session: Session) -> str:
    """Fires only for a cached answer: bit for bit the old output, and wrong for the new values.
    A merely wrong answer is the correct rung's to report. The float64 reference (twice a float32
    output's bytes) is computed only for an output that repeats the old one, the rare case."""
    try:
        got_list = [g for g, _ in matched(called, expected)]
    except Failed as e:
        return f"after new values at the same addresses: {e.message}"
    repeats = [
        k
        for k, (got, before) in enumerate(zip(got_list, old, strict=False))
        if got.shape == before.shape and not bool(bits_differ(got, before).any())
    ]
    if not repeats:
        return ""
    precise = tensor_list(session.reference(fresh, precise=True)) or []
    tolerance = session.problem.tolerance
    for k in repeats:
        got = got_list[k]
        if (
            k < len(precise)
            and not compare(got, precise[k], Tolerance.for_dtype(str(got.dtype), tolerance)).ok
        ):
            return "new values written into the same input tensors gave the previous answer"
    return ""


def _name_stale(
    session: Session, fresh: Any, expected: Any, old: list[torch.Tensor], stale: str, calls: list[Seen]
) -> str:
    """What a stale answer is: the same new values in new tensors tell a cache keyed by the
    inputs' addresses (the right answer there) from an output that ignores its input (the previous
    answer again, wherever the values are)."""
    if not stale.startswith("new values"):
        return stale
    elsewhere = session.call(fresh, expected, placed=session.solution.place(fresh, fresh=True))
    calls.append(Seen("the call on new values in new tensors", elsewhere))
    session.release(elsewhere.placed)
    again = [o for o in elsewhere.outs if o is not None]
    if len(again) == len(old) and not _differs(old, again):
        return (
            "output does not depend on the input: new values gave the previous answer bit for bit, "
            "in the same input tensors and in new ones"
        )
    return f"output cached: {stale}, the same values in new tensors another (a cache keyed by the inputs' addresses)"
