"""run: one call on the first test case; kind, shape, dtype, every element written, finite.

SKIPPED, before anything is built, when that case is too large for this machine (case_size.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rung.common.poison import poisoned_mask
from rung.judge import case_size
from rung.judge.rungs.outcome import Failed
from rung.judge.rungs.outputs import matched
from rung.spec import RungResult, Status

if TYPE_CHECKING:
    from rung.judge.session import Session


def run(session: Session, params: dict[str, Any]) -> RungResult:
    case, size = case_size.first_test_case(session)
    inputs = session.inputs(case, session.seed)
    expected = session.reference(inputs, precise=False)
    session.at = f"test case {case} (seed {session.seed})"
    called = session.call(inputs, expected)
    session.release(called.placed)
    metrics: dict[str, Any] = {
        "case": case,
        "call_s": round(called.report.seconds, 6),
        "launches": called.report.launches,
        **size,
    }
    pairs = matched(called, expected)
    metrics["outputs"] = [
        {"shape": list(g.shape), "dtype": str(g.dtype).removeprefix("torch.")} for g, _ in pairs
    ]
    for i, (got, ref) in enumerate(pairs):
        which = "" if len(pairs) == 1 else f"output {i}: "
        unwritten = poisoned_mask(got)
        if bool(unwritten.any()):
            first = [int(x) for x in unwritten.nonzero()[0]]
            raise Failed(
                f"{which}{int(unwritten.sum())} of {got.numel()} elements never written "
                f"(still the harness's poison), first at {tuple(first)}",
                metrics,
            )
        if got.is_floating_point():
            bad = ~torch.isfinite(got) & torch.isfinite(ref)
            if bool(bad.any()):
                first = [int(x) for x in bad.nonzero()[0]]
                raise Failed(
                    f"{which}{int(bad.sum())} non-finite elements where the reference is finite, "
                    f"first at {tuple(first)}",
                    metrics,
                )
    shapes = ", ".join(f"{o['dtype']}{tuple(o['shape'])}" for o in metrics["outputs"])
    return RungResult("run", Status.OK, f"{shapes}, all written and finite", metrics)
