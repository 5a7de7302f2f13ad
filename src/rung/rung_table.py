"""The one rung table: for each rung of the ladder, the function that implements it, the process
it runs in, and its headline figure (the few numbers of its result worth a glance).

The ladder (`ladder.py`) says what each rung needs and when it may run; this table says what
runs it. A function is named "module:function" and imported only in the process that runs it: a
judge's rung imports torch, which the controller never does (`tests/test_boundary.py`).
`tests/test_rung_table.py` holds the table to the ladder: the same rungs, and a rung the
controller computes exactly where the ladder says `in_controller`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JUDGE, CONTROLLER = "judge", "controller"


def _nothing(m: dict[str, Any]) -> str:
    return ""


def figure_text(v: Any) -> str:
    """A figure as a person reads it: three significant digits, inf and nan as they are."""
    if isinstance(v, float) and math.isfinite(v):
        return f"{v:.3g}"
    return str(v)


def _backend(m: dict[str, Any]) -> str:
    return f"backend={m.get('backend', '?')}"


def _build(m: dict[str, Any]) -> str:
    if "max_registers" not in m:
        return ""
    return f"regs={m['max_registers']} smem={m['max_shared_bytes']}B spills={m['spill_instructions']}"


def _call(m: dict[str, Any]) -> str:
    return f"call={m['call_s']:.3g}s launches={m.get('launches', 0)}" if "call_s" in m else ""


def _errors(m: dict[str, Any]) -> str:
    if "max_abs_err" not in m:
        return ""
    # what is missing comes first, where anything is: the error figures then read inf
    missing = [k for k in ("unwritten_pct", "nonfinite_mismatches") if m.get(k)]
    keys = (*missing, "max_abs_err", "max_rel_err", "psnr_db", "cosine")
    return " ".join(f"{k}={figure_text(m[k])}" for k in keys if k in m)


@dataclass(frozen=True)
class Implementation:
    where: str  # JUDGE (asked of the candidate's judge) or CONTROLLER (from stored figures)
    function: str  # "module:function", imported where it runs
    headline: Callable[[dict[str, Any]], str] = _nothing  # from the result's metrics

    def load(self) -> Callable[..., Any]:
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)


RUNGS: dict[str, Implementation] = {
    "load": Implementation(JUDGE, "rung.judge.rungs.load:load", _backend),
    "compile": Implementation(JUDGE, "rung.judge.rungs.compile:compile_rung", _build),
    "run": Implementation(JUDGE, "rung.judge.rungs.run:run", _call),
    "guard": Implementation(JUDGE, "rung.judge.rungs.guard:guard"),
    "correct": Implementation(JUDGE, "rung.judge.rungs.correct:correct", _errors),
    "scale": Implementation(JUDGE, "rung.judge.rungs.correct:scale", _errors),
    "memcheck": Implementation(JUDGE, "rung.judge.rungs.memcheck:memcheck"),
    "bench": Implementation(JUDGE, "rung.judge.rungs.bench:bench"),
    "roofline": Implementation(CONTROLLER, "rung.derived.roofline:roofline"),
    "dump": Implementation(CONTROLLER, "rung.derived.sass:dump"),
    "trace": Implementation(CONTROLLER, "rung.derived.trace:trace"),
    "profile": Implementation(JUDGE, "rung.judge.rungs.profile:profile"),
    "scopes": Implementation(JUDGE, "rung.judge.rungs.scopes:scopes"),
}


def headline(name: str, metrics: dict[str, Any]) -> str:
    """The few numbers of a rung's result worth a glance; '' for a name not in the table (the
    executor's own record of a lost worker)."""
    found = RUNGS.get(name)
    return found.headline(metrics) if found else ""
