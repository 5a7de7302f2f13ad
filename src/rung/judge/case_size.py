"""Whether a case fits this machine, decided before any rung builds it.

On a machine without CUDA, Triton runs under its interpreter and the solution process has an
address-space cap (RUNG_WORKER_MEMORY_MB): KernelBench's ReLU (4096 x 393216 float32, 6 GiB of
input) ended ERROR at compile and run after 54 s, and its LayerNorm (256 MiB of input) took 100 s
through run, guard and correct with a plain torch solution. So run, guard, correct and scale ask the problem for a case's inputs plus output, sized without building it
(`LoadedProblem.case_size`), and a case over RUNG_CPU_MAX_CASE_MB, or over
RUNG_CPU_MAX_CASE_GFLOP by the cost model, is not built: the rung is SKIPPED naming it, never a
FAIL or ERROR of the solution. A case that cannot be sized without building it (GPU MODE's
generate_input picks its own device) is built, and the rung's figures say its size was unknown.
On a CUDA device every case is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rung import knobs
from rung.errors import ProblemError
from rung.judge.rungs.outcome import Skipped

if TYPE_CHECKING:
    from rung.judge.session import Session

TOO_LARGE = "too large for the CPU interpreter"


@dataclass(frozen=True)
class Fit:
    """Whether one case is built here: `over` says why not ('' when it is); `figures` are what
    the rung records of its size (none on a CUDA device)."""

    over: str = ""
    figures: dict[str, Any] = field(default_factory=dict)


def fit(session: Session, case: dict[str, Any]) -> Fit:
    """Whether `case` may be built on this machine, from its size alone."""
    if session.device != "cpu":
        return Fit()
    try:
        size = session.problem.case_size(case)
    except ProblemError:
        raise
    except Exception as e:  # its cost model: the problem's code
        raise ProblemError(f"{session.problem.path}: sizing {case} raised {type(e).__name__}: {e}") from None
    if size.total_bytes is None:
        return Fit(figures={"case_size": f"unknown, so not held to RUNG_CPU_MAX_CASE_MB: {size.how}"})
    mib = size.total_bytes / 2**20
    figures = {"case_mib": round(mib, 3), "case_sized_by": size.how}
    mb_limit = float(knobs.get("RUNG_CPU_MAX_CASE_MB"))
    if mib > mb_limit:
        guess = f" ({size.how})" if size.estimated else ""
        return Fit(
            f"{case}: {mib:.0f} MiB of inputs and output{guess} > RUNG_CPU_MAX_CASE_MB={mb_limit:g}", figures
        )
    gflop = int((session.cost(case) or {}).get("flops", 0)) / 1e9
    gflop_limit = float(knobs.get("RUNG_CPU_MAX_CASE_GFLOP"))
    if gflop > gflop_limit:
        return Fit(f"{case}: {gflop:.1f} GFLOP > RUNG_CPU_MAX_CASE_GFLOP={gflop_limit:g}", figures)
    return Fit(figures=figures)


def first_test_case(session: Session) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first test case (what run and guard call the solution on) and its size figures;
    Skipped when it is too large to build here."""
    case = session.problem.tests[0]
    here = fit(session, case)
    if here.over:
        raise Skipped(f"{here.over}: {TOO_LARGE}", {"case": case, **here.figures})
    return case, here.figures


def split(
    session: Session, cases: list[tuple[int, dict[str, Any]]]
) -> tuple[list[tuple[int, dict[str, Any]]], list[str], dict[str, Any]]:
    """(the cases that may be built here, why each other one may not, the size figures of the
    first case whose size is unknown)."""
    feasible: list[tuple[int, dict[str, Any]]] = []
    over: list[str] = []
    unknown: dict[str, Any] = {}
    for index, case in cases:
        here = fit(session, case)
        if here.over:
            over.append(here.over)
        else:
            feasible.append((index, case))
        if "case_size" in here.figures and not unknown:
            unknown = here.figures
    return feasible, over, unknown
