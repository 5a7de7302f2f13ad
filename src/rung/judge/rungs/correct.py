"""correct and scale: the solution against the reference on fresh inputs, case by case.

`correct` checks every TESTS case with RUNG_TRIALS fresh seeds (a format's own count, KernelBench's
5, where the knob is not set). `scale` checks every BENCHMARKS
case (the sizes that will be timed) with one fresh seed, so a kernel right only at small sizes
does not pass. After every call the judge reads the inputs back: one the call changed (or that
now holds an output's values, an alias) fails the case, named with its first changed index. On
the CPU a case too large for the interpreter is not built (case_size.py); the rung then checks
the others, names it, and is SKIPPED rather than OK.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from rung import knobs
from rung.judge import case_size, tf32
from rung.judge.compare import Comparison, compare
from rung.judge.rungs.outcome import Failed, Skipped
from rung.judge.rungs.outputs import matched
from rung.judge.tolerance import Tolerance
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session


def trial_seed(base: int, case_index: int, trial: int) -> int:
    return (base * 1_000_003 + case_index * 7_919 + trial * 104_729 + 1) % (2**31 - 1)


def check_case(session: Session, case: dict[str, Any], seed: int) -> tuple[bool, str, dict[str, Any]]:
    """One case, one seed: (ok, message, figures). Raises Failed on a kind/shape/dtype mismatch."""
    return check_inputs(session, session.inputs(case, seed))


def check_inputs(session: Session, inputs: tuple[Any, ...]) -> tuple[bool, str, dict[str, Any]]:
    """The solution on these inputs against the reference: (ok, message, figures). Where the
    problem has its own check (GPU MODE's check_implementation), that is the verdict, and rung's
    figures are reported beside it. The solution works on its own copy of the inputs, so the
    judge's stay as they were drawn."""
    expected = session.reference(inputs, precise=False)
    return check_against(session, inputs, expected, session.reference(inputs, precise=True))


def check_against(
    session: Session, inputs: tuple[Any, ...], expected: Any, precise: Any
) -> tuple[bool, str, dict[str, Any]]:
    """`check_inputs` with the references already computed (by a caller that needs them again).
    An input the call changed fails it whatever the outputs say (the judge reads every input
    back after every call)."""
    called = session.call(inputs, expected)
    session.release(called.placed)
    if called.changed:
        return False, "; ".join(said for _, said in called.changed), {}
    return judge_outputs(session, inputs, called, expected, precise, ours=True)


def judge_outputs(
    session: Session,
    inputs: tuple[Any, ...],
    called: Any,
    expected: Any,
    precise: Any,
    figures: bool = True,
    ours: bool = False,
) -> tuple[bool, str, dict[str, Any]]:
    """The verdict on one call's copied-out outputs, against the references for its inputs.
    Where the problem has its own check, that check is the verdict on values, and rung's own
    policy failing is a warning (a failure too under RUNG_STRICT=1). `figures=False`: the same
    verdict, error figures only for what fails (compare's fast path). `ours`: `expected` is the
    reference's output on these very inputs, which the problem's own check may take rather than
    run the reference again (else it gives the shapes only). A failure or warning whose size is
    TF32's says so (tf32.py)."""
    pairs = matched(called, expected)
    value = pairs[0][0] if isinstance(expected, torch.Tensor) else tuple(g for g, _ in pairs)
    comparisons = _comparisons(session, pairs, precise, figures)
    wrong = next((i for i, c in enumerate(comparisons) if not c.ok), -1)
    rung_says = "" if wrong < 0 else _which(wrong, comparisons) + comparisons[wrong].message
    own = session.check(inputs, value, expected if ours else None)
    if own is not None:
        ok, message = own
        if not ok:
            message += _tf32(session, inputs, pairs, precise)
            return False, f"the problem's own check: {message}", _worst(comparisons)
        if rung_says and session.strict:
            rung_says += _tf32(session, inputs, pairs, precise)
            return False, f"rung's own policy (RUNG_STRICT=1): {rung_says}", comparisons[wrong].metrics
        # A rung keeps its first such warning; naming TF32 costs a run of the reference, so once.
        if rung_says and "policy" not in session.warnings:
            rung_says += _tf32(session, inputs, pairs, precise)
            session.warn(
                "policy", f"the problem's own check passes it, rung's own policy would not: {rung_says}"
            )
        return True, "", _worst(comparisons)
    if rung_says:
        return False, rung_says + _tf32(session, inputs, pairs, precise), comparisons[wrong].metrics
    return True, "", _worst(comparisons)


def _tf32(session: Session, inputs: tuple[Any, ...], pairs: list[Any], precise: Any) -> str:
    said = tf32.explain(session, inputs, [g for g, _ in pairs], precise)
    return f"; {said}" if said else ""


def _which(i: int, comparisons: list[Comparison]) -> str:
    return "" if len(comparisons) == 1 else f"output {i}: "


def _comparisons(session: Session, pairs: list[Any], precise: Any, figures: bool = True) -> list[Comparison]:
    """Each output against its float64 reference, under the policy of the dtype it came in (the
    reference's, unless a lenient format let it differ)."""
    exact = [precise] if isinstance(precise, torch.Tensor) else list(precise)
    return [
        compare(
            got,
            ref.reshape(got.shape),
            Tolerance.for_dtype(str(got.dtype), session.problem.tolerance),
            figures,
        )
        for (got, _), ref in zip(pairs, exact, strict=False)
    ]


def _worst(comparisons: list[Comparison]) -> dict[str, Any]:
    return max((c.metrics for c in comparisons), key=lambda m: m.get("max_abs_err", 0.0), default={})


def _summary(figures: list[dict[str, Any]]) -> dict[str, Any]:
    finite = [f for f in figures if f]
    if not finite:
        return {}
    return {
        "max_abs_err": max(f.get("max_abs_err", 0.0) for f in finite),
        "max_rel_err": max(f.get("max_rel_err", 0.0) for f in finite),
        "norm_rel_err": max(f.get("norm_rel_err", 0.0) for f in finite),
        "mse": max(f.get("mse", 0.0) for f in finite),
        "rmse": max(f.get("rmse", 0.0) for f in finite),
        "psnr_db": min(f.get("psnr_db", math.inf) for f in finite),
        "cosine": min(f.get("cosine", 1.0) for f in finite),
    }


def _check_cases(
    session: Session, cases: list[tuple[int, dict[str, Any]]], trials: int, what: str, rung: str
) -> dict[str, Any]:
    figures: list[dict[str, Any]] = []
    checked = 0
    for index, case in cases:
        for trial in range(trials):
            listed = session.problem.listed_seed(case)
            seed = listed if trial == 0 and listed is not None else trial_seed(session.seed, index, trial)
            session.at = f"{what} case {case} (seed {seed})"
            try:
                ok, message, m = check_case(session, case, seed)
            except Failed as e:
                raise Failed(
                    f"{what} case {case} (seed {seed}): {e.message}", {"case": case, "seed": seed}
                ) from None
            checked += 1
            session.progress(rung, checked, len(cases) * trials, case)
            if not ok:
                raise Failed(
                    f"{what} case {case} (seed {seed}): {message}",
                    {"case": case, "seed": seed, "trials_passed": checked - 1, **m},
                )
            figures.append(m)
    return {"cases": len(cases), "trials": checked, **_summary(figures)}


def correct(session: Session, params: dict[str, Any]) -> RungResult:
    tests = list(enumerate(session.problem.tests))
    own = session.problem.trials
    trials = max(1, int(knobs.get("RUNG_TRIALS") if own is None or knobs.given("RUNG_TRIALS") else own))
    m = _check_fitting(session, tests, trials, "test", "correct")
    return RungResult(
        "correct", Status.OK, f"{m['cases']} test cases x {trials} fresh seeds match the reference", m
    )


def scale(session: Session, params: dict[str, Any]) -> RungResult:
    benchmarks = session.problem.benchmarks
    if not benchmarks:
        raise Skipped("the problem lists no BENCHMARKS")
    offset = len(session.problem.tests)
    m = _check_fitting(session, [(offset + i, c) for i, c in enumerate(benchmarks)], 1, "benchmark", "scale")
    return RungResult("scale", Status.OK, f"all {len(benchmarks)} benchmark cases match the reference", m)


def _check_fitting(
    session: Session, cases: list[tuple[int, dict[str, Any]]], trials: int, what: str, rung: str
) -> dict[str, Any]:
    """The cases that fit this machine checked; SKIPPED, naming the others, when some do not."""
    feasible, over, unknown = case_size.split(session, cases)
    m: dict[str, Any] = (
        _check_cases(session, feasible, trials, what, rung) if feasible else {"cases": 0, "trials": 0}
    )
    m.update(unknown)
    if over:
        m["not_checked"] = over
        checked = f"checked {len(feasible)} of {len(cases)} {what} cases (all match); " if feasible else ""
        raise Skipped(f"{checked}{'; '.join(over)}: {case_size.TOO_LARGE}", m)
    return m
